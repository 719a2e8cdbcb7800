"""Load a gpufeed tune config and apply it to a PyTorch DataLoader.

Standard library only (PyTorch is the caller's):

    import gpufeed_config
    cfg = gpufeed_config.load("gpufeed-config.json")
    gpufeed_config.apply_environment(cfg)            # only variables tune justified
    loader = torch.utils.data.DataLoader(
        dataset, worker_init_fn=gpufeed_config.worker_init_fn(cfg, rank=local_rank),
        **gpufeed_config.dataloader_kwargs(cfg))
"""
import json
import os

SCHEMA = "gpufeed.config/v1"
_KWARGS = ("num_workers", "prefetch_factor", "persistent_workers", "pin_memory", "batch_size", "drop_last")


class ConfigError(ValueError):
    """The file is not a gpufeed.config/v1 document."""


def load(path):
    """Reads and checks a config; raises ConfigError naming the file and the problem."""
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read a JSON config: {e}") from e
    if not isinstance(cfg, dict) or cfg.get("schema") != SCHEMA:
        found = cfg.get("schema") if isinstance(cfg, dict) else type(cfg).__name__
        raise ConfigError(f"{path}: schema {found!r} is not {SCHEMA}; write it again with gpufeed tune")
    missing = [k for k in _KWARGS if k not in cfg.get("dataloader", {})]
    if missing:
        raise ConfigError(f"{path}: dataloader lacks {', '.join(missing)}")
    return cfg


def dataloader_kwargs(cfg):
    """The keyword arguments for torch.utils.data.DataLoader."""
    kwargs = {k: cfg["dataloader"][k] for k in _KWARGS}
    if kwargs["num_workers"] == 0:  # PyTorch rejects these without workers
        kwargs.pop("prefetch_factor")
        kwargs["persistent_workers"] = False
    return kwargs


def cpus_of(text):
    """'0-3,8' -> {0, 1, 2, 3, 8}."""
    cpus = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def worker_cpus(cfg, rank):
    for r in cfg.get("ranks", []):
        if r.get("rank") == rank and r.get("worker_cpus"):
            return cpus_of(r["worker_cpus"])
    return set()


def worker_init_fn(cfg, rank=None):
    """A worker_init_fn that binds each worker to its rank's NUMA-local CPUs
    (rank defaults to $LOCAL_RANK, else 0). CPUs this process may not use
    are dropped; with none left the worker is not bound."""
    if rank is None:
        rank = int(os.environ.get("LOCAL_RANK", "0"))
    cpus = worker_cpus(cfg, rank)

    def init(_worker_id):
        usable = cpus & os.sched_getaffinity(0) if cpus else set()
        if usable:
            os.sched_setaffinity(0, usable)

    return init


def apply_environment(cfg, environ=os.environ):
    """Sets the variables tune justified with a measurement, unless already set.
    Returns the names it set."""
    done = []
    for e in cfg.get("environment", []):
        if e["name"] not in environ:
            environ[e["name"]] = e["value"]
            done.append(e["name"])
    return done
