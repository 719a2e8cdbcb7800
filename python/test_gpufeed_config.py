"""Tests of python/gpufeed_config.py: /usr/bin/python3 -m unittest python/test_gpufeed_config.py
(argv[1], when given, is a config written by gpufeed tune to check too)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufeed_config  # noqa: E402

CONFIG = {
    "schema": "gpufeed.config/v1",
    "dataloader": {"num_workers": 6, "prefetch_factor": 4, "persistent_workers": True, "pin_memory": True,
                   "batch_size": 64, "drop_last": True},
    "ranks": [{"rank": 0, "gpu": None, "numa_node": 0, "worker_cpus": "0"}],
    "environment": [{"name": "GPUFEED_TEST_VAR", "value": "1", "because": "a test"}],
}


def write(obj):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(obj, f)
    f.close()
    return f.name


class ConfigTest(unittest.TestCase):
    def test_kwargs_are_the_dataloader_arguments(self):
        cfg = gpufeed_config.load(write(CONFIG))
        self.assertEqual(gpufeed_config.dataloader_kwargs(cfg),
                         {"num_workers": 6, "prefetch_factor": 4, "persistent_workers": True, "pin_memory": True,
                          "batch_size": 64, "drop_last": True})

    def test_wrong_schema_is_refused_by_name(self):
        with self.assertRaisesRegex(gpufeed_config.ConfigError, "gpufeed.config/v9"):
            gpufeed_config.load(write(dict(CONFIG, schema="gpufeed.config/v9")))
        with self.assertRaises(gpufeed_config.ConfigError):
            gpufeed_config.load("/nonexistent.json")

    def test_cpulists(self):
        self.assertEqual(gpufeed_config.cpus_of("0-3,8"), {0, 1, 2, 3, 8})
        self.assertEqual(gpufeed_config.cpus_of(""), set())

    def test_worker_init_binds_to_the_ranks_cpus(self):
        cfg = gpufeed_config.load(write(CONFIG))
        before = os.sched_getaffinity(0)
        pid = os.fork()
        if pid == 0:  # bind in a child, so this process keeps its CPUs
            gpufeed_config.worker_init_fn(cfg, rank=0)(0)
            os._exit(0 if os.sched_getaffinity(0) == {0} else 1)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual(os.sched_getaffinity(0), before)

    def test_environment_only_fills_what_is_unset(self):
        cfg = gpufeed_config.load(write(CONFIG))
        env = {}
        self.assertEqual(gpufeed_config.apply_environment(cfg, env), ["GPUFEED_TEST_VAR"])
        self.assertEqual(gpufeed_config.apply_environment(cfg, {"GPUFEED_TEST_VAR": "2"}), [])

    def test_a_real_config_drives_a_real_dataloader(self):
        path = os.environ.get("GPUFEED_CONFIG_UNDER_TEST")
        if not path:
            self.skipTest("no config from gpufeed tune given (GPUFEED_CONFIG_UNDER_TEST)")
        try:
            import torch
            from torch.utils.data import DataLoader
        except ImportError:
            self.skipTest("torch is not installed")
        cfg = gpufeed_config.load(path)
        kwargs = gpufeed_config.dataloader_kwargs(cfg)
        kwargs["batch_size"] = 2
        loader = DataLoader(list(range(16)), worker_init_fn=gpufeed_config.worker_init_fn(cfg), **kwargs)
        self.assertEqual(sorted(int(x) for b in loader for x in b), list(range(16)))


if __name__ == "__main__":
    unittest.main()
