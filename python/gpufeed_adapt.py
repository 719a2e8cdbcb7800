"""Between-epoch adaptation of a PyTorch DataLoader.

The training loop iterates an AdaptiveLoader instead of its DataLoader. Each
epoch the wrapper measures how long the loop waits for batches; between
epochs, while the loop is starved, it re-creates the DataLoader with more
workers (or, once more workers stop helping, deeper prefetch), within a CPU
and memory budget. A change is kept only if the next epoch is faster; one
that is not is undone and growth stops, so a fed job is never changed and a
starved one converges instead of oscillating.

Standard library only (PyTorch is the caller's):

    import gpufeed_adapt
    loader = gpufeed_adapt.AdaptiveLoader(
        lambda workers, prefetch: torch.utils.data.DataLoader(
            dataset, batch_size=64, shuffle=True, num_workers=workers,
            prefetch_factor=prefetch if workers else None),
        num_workers=2, prefetch_factor=2,
        config="gpufeed-config.json",       # optional: its budget and starting point
        advice="monitor.jsonl")             # optional: a gpufeed monitor --jsonl file
    for epoch in range(epochs):
        for batch in loader:
            train_step(batch)
        print(loader.history[-1].summary())  # what it measured and what it decided

Every decision is in loader.history (EpochRecord) and, with log=print (or any
callable taking a string), one line per epoch.
"""
import json
import math
import os
import resource
import time

import gpufeed_config

# A loop waiting at most this share of its steady-state time is fed; growth
# starts only above STARVED_WAIT (and goes on, once started, above FED_WAIT),
# so a fed job's noise never starts a change.
FED_WAIT = 0.05
STARVED_WAIT = 0.10
# A change must raise the batch rate by this much to be kept: less is noise.
MIN_GAIN = 0.03
# Extra workers for the latency tail (as diagnose's Little's-law estimate).
HEADROOM = 1.15
# One epoch's measurement is extrapolated at most this far.
MAX_GROWTH = 8
# Fewer steady batches than this say too little to act on.
MIN_BATCHES = 8
# The share of this rank's memory its workers and in-flight batches may use,
# so that the model, the page cache and the other ranks keep the rest.
MEMORY_SHARE = 0.25
# File descriptors a worker holds (its queues, pipes and the files it reads).
FDS_PER_WORKER = 8
MAX_PREFETCH = 16
# An epoch judges a config only if its steady batches are at least this many
# times the batches in flight (workers x prefetch): the first of those arrive
# in a burst when the workers start together, and say nothing of the supply.
JUDGE_IN_FLIGHT = 2
DEFAULT_MAX_WORKERS = 128


class Budget:
    """What this rank's workers may use: cores, bytes and a worker cap."""

    def __init__(self, cpus, memory_bytes, max_workers, because):
        self.cpus = cpus
        self.memory_bytes = memory_bytes
        self.max_workers = max_workers
        self.because = because

    def __repr__(self):
        return (f"Budget(cpus={self.cpus:g}, memory_bytes={self.memory_bytes}, "
                f"max_workers={self.max_workers}; {self.because})")


def _mem_available(meminfo="/proc/meminfo"):
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def budget_for(config=None, ranks=None, max_workers=None, cpus=None, memory_bytes=None):
    """This rank's budget: the CPUs this process may run on (or the config's
    machine) shared among the node's ranks, a quarter of the memory available
    per rank, and the file-descriptor limit. Explicit arguments win."""
    cfg = gpufeed_config.load(config) if isinstance(config, str) else config
    why = []
    if ranks is None:
        ranks = int((cfg or {}).get("workload", {}).get("ranks") or os.environ.get("LOCAL_WORLD_SIZE", "1"))
    ranks = max(1, ranks)
    if cpus is None:
        usable = len(os.sched_getaffinity(0))
        machine = (cfg or {}).get("machine", {}).get("cpus") or usable
        cpus = min(usable, machine) / ranks
        why.append(f"{cpus:g} cores ({min(usable, machine)} usable / {ranks} rank(s))")
    if memory_bytes is None:
        avail = _mem_available()
        machine = (cfg or {}).get("machine", {}).get("memory_bytes") or avail or 0
        total = min(v for v in (avail, machine) if v) if (avail or machine) else 0
        memory_bytes = int(total / ranks * MEMORY_SHARE)
        why.append(f"{memory_bytes >> 20} MiB ({MEMORY_SHARE:g} of the available memory per rank)")
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fd_cap = DEFAULT_MAX_WORKERS if soft == resource.RLIM_INFINITY else max(1, soft // FDS_PER_WORKER)
    cap = min(DEFAULT_MAX_WORKERS, fd_cap)
    if max_workers is not None:
        cap = min(cap, max_workers)
        why.append(f"max_workers={max_workers}")
    elif fd_cap < DEFAULT_MAX_WORKERS:
        why.append(f"{fd_cap} workers by the open-file limit {soft}")
    return Budget(cpus, memory_bytes, cap, ", ".join(why))


def read_advice(path, tail_bytes=256 * 1024):
    """The findings active at the end of a gpufeed monitor --jsonl file:
    {finding id: its figures}. A missing or unreadable file is no advice."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - tail_bytes))
            lines = f.read().splitlines()
    except OSError:
        return {}
    active = {}
    for raw in lines:
        try:
            rec = json.loads(raw)
        except ValueError:
            continue  # the first line of the tail may be cut
        if not isinstance(rec, dict) or rec.get("type") != "finding":
            continue
        if rec.get("event") == "started":
            active[rec.get("id")] = rec.get("figures") or {}
        elif rec.get("event") == "stopped":
            active.pop(rec.get("id"), None)
    return active


class Measurement:
    """One epoch as the loop saw it. Steady state starts when the first batch
    arrives (worker start-up is the first wait) and ends when the loop asks
    for the batch after the last (the loader's shutdown is not a wait)."""

    def __init__(self, batches, first_wait_s, steady_wall_s, steady_wait_s, worker_cpu_s, batch_bytes,
                 worker_private_bytes=None):
        self.batches = batches
        self.first_wait_s = first_wait_s
        self.steady_wall_s = steady_wall_s
        self.steady_wait_s = steady_wait_s
        self.worker_cpu_s = worker_cpu_s  # None when it could not be read
        self.batch_bytes = batch_bytes
        self.worker_private_bytes = worker_private_bytes  # one worker's, None when unknown

    @property
    def steady_batches(self):
        return max(0, self.batches - 1)

    @property
    def wait_ratio(self):
        return self.steady_wait_s / self.steady_wall_s if self.steady_wall_s > 0 else None

    @property
    def batches_per_s(self):
        return self.steady_batches / self.steady_wall_s if self.steady_wall_s > 0 else None

    def worker_cpu_share(self, workers):
        """The share of each worker's time spent on CPU over the epoch."""
        wall = self.first_wait_s + self.steady_wall_s
        if self.worker_cpu_s is None or workers <= 0 or wall <= 0:
            return None
        return self.worker_cpu_s / (workers * wall)


class EpochRecord:
    def __init__(self, epoch, workers, prefetch, measurement, next_workers, next_prefetch, action, because):
        self.epoch = epoch
        self.num_workers = workers
        self.prefetch_factor = prefetch
        self.measurement = measurement
        self.next_num_workers = next_workers
        self.next_prefetch_factor = next_prefetch
        self.action = action  # "hold", "grow", "prefetch", "revert"
        self.because = because

    def as_dict(self):
        m = self.measurement
        return {"epoch": self.epoch, "num_workers": self.num_workers, "prefetch_factor": self.prefetch_factor,
                "batches": m.batches, "wait_ratio": m.wait_ratio, "batches_per_s": m.batches_per_s,
                "first_wait_s": m.first_wait_s,  "worker_cpu_s": m.worker_cpu_s,
                "worker_cpu_share": m.worker_cpu_share(self.num_workers), "batch_bytes": m.batch_bytes,
                "action": self.action, "next_num_workers": self.next_num_workers,
                "next_prefetch_factor": self.next_prefetch_factor, "because": self.because}

    def summary(self):
        m = self.measurement
        wait = f"{m.wait_ratio:.0%}" if m.wait_ratio is not None else "unknown"
        rate = f"{m.batches_per_s:.1f}" if m.batches_per_s is not None else "unknown"
        head = (f"gpufeed_adapt: epoch {self.epoch}: {self.num_workers} workers, prefetch {self.prefetch_factor}: "
                f"loop waited {wait} of its time, {rate} batches/s")
        if self.action == "hold":
            return f"{head}; keeps them: {self.because}"
        return (f"{head}; next epoch {self.next_num_workers} workers, prefetch {self.next_prefetch_factor} "
                f"({self.action}: {self.because})")


class Policy:
    """The between-epoch decision, free of PyTorch and of the clock.

    Starved: grow the workers to what Little's law says the loop needs
    (workers / (1 - wait) x headroom), capped by the CPU budget when the
    workers compute, by memory, by the worker cap, and by MAX_GROWTH per
    epoch. The next epoch must be MIN_GAIN faster, else the change is undone
    and workers stop growing; then deeper prefetch gets one such trial.
    Fed: nothing changes."""

    def __init__(self, workers, prefetch, budget):
        self.workers = workers
        self.prefetch = prefetch
        self.budget = budget
        self.trial = None  # (workers, prefetch, batches/s) the last change is judged against
        self.workers_done = False
        self.prefetch_done = False
        self.settled_rate = None  # the rate growth stopped at: a big drop later re-opens it

    def _hold(self, because):
        return self.workers, self.prefetch, "hold", because

    def _change(self, workers, prefetch, action, because, rate):
        self.trial = (self.workers, self.prefetch, rate)
        self.workers, self.prefetch = workers, prefetch
        return workers, prefetch, action, because

    def _memory_cap(self, m, prefetch):
        per_worker = prefetch * (m.batch_bytes or 0) + (m.worker_private_bytes or 0)
        if per_worker <= 0 or self.budget.memory_bytes <= 0:
            return None
        return max(1, int(self.budget.memory_bytes // per_worker))

    def decide(self, m, advice=None):
        """(workers, prefetch, action, because) for the next epoch."""
        advice = advice or {}
        wait, rate = m.wait_ratio, m.batches_per_s
        if m.steady_batches < MIN_BATCHES or wait is None or rate is None:
            return self._hold(f"only {m.steady_batches} steady batches: too few to judge")

        if self.trial is not None:
            base_w, base_p, base_rate = self.trial
            self.trial = None
            if rate < base_rate * (1 + MIN_GAIN):
                what = "workers" if base_w != self.workers else "prefetch"
                if what == "workers":
                    self.workers_done = True
                else:
                    self.prefetch_done = True
                self.settled_rate = base_rate
                self.workers, self.prefetch = base_w, base_p
                return (base_w, base_p, "revert",
                        f"{rate:.1f} batches/s is not {MIN_GAIN:.0%} above {base_rate:.1f} at {base_w} workers, "
                        f"prefetch {base_p}: undone, no more {what}")
            self.settled_rate = None
            kept = True
        else:
            kept = False

        if wait <= FED_WAIT or (wait <= STARVED_WAIT and not kept):
            self.settled_rate = self.settled_rate or rate
            return self._hold(f"fed: the loop waits {wait:.0%} (growth starts above {STARVED_WAIT:.0%})")

        if self.settled_rate is not None and rate < self.settled_rate * 0.8:
            # The data or the storage changed under the job (a new dataset, a
            # colder cache): what growth learnt no longer holds.
            self.workers_done = self.prefetch_done = False
            self.settled_rate = None

        if not self.workers_done:
            grown = self._grow_workers(m, wait, advice)
            if grown[0] > self.workers:
                return self._change(grown[0], self.prefetch, "grow", grown[1], rate)
            self.workers_done = True
            limit = grown[1]
        else:
            limit = "more workers did not help"

        if not self.prefetch_done and self.workers > 0:
            change = self._deeper_prefetch(m, wait, limit, rate)
            if change:
                return change
        self.settled_rate = self.settled_rate or rate
        return self._hold(f"starved ({wait:.0%} wait), but {limit}, and deeper prefetch did not help or does not fit")

    def _deeper_prefetch(self, m, wait, why, rate):
        """A prefetch trial, or None (and no more of them) when it cannot deepen."""
        deeper = min(MAX_PREFETCH, self.prefetch * 2)
        mem = self._memory_cap(m, deeper)
        judged = self.workers * deeper * JUDGE_IN_FLIGHT <= m.steady_batches
        if deeper > self.prefetch and (mem is None or mem >= self.workers) and judged:
            return self._change(self.workers, deeper, "prefetch",
                                f"starved ({wait:.0%} wait) and {why}: deeper prefetch absorbs the latency tail", rate)
        self.prefetch_done = True
        return None

    def _grow_workers(self, m, wait, advice):
        """(target workers, why): the target is <= self.workers when a cap binds."""
        n = self.workers
        need = math.ceil(max(n, 1) / max(1.0 - wait, 1e-6) * HEADROOM)
        why = f"the loop waits {wait:.0%}: {n} workers / (1 - {wait:.2f}) x {HEADROOM} = {need}"
        recommended = (advice.get("loader.too-few-workers") or {}).get("recommended_num_workers")
        if isinstance(recommended, int) and recommended > need:
            need, why = recommended, f"gpufeed monitor recommends {recommended} workers (loader.too-few-workers)"
        judge_cap = max(1, m.steady_batches // (JUDGE_IN_FLIGHT * self.prefetch))
        caps = [(max(n, 1) * MAX_GROWTH, f"at most {MAX_GROWTH}x per epoch"),
                (judge_cap, f"an epoch of {m.steady_batches} batches judges at most {judge_cap} workers "
                            f"at prefetch {self.prefetch}"),
                (self.budget.max_workers, f"the worker cap {self.budget.max_workers}")]
        saturated = [k for k in ("cpu.saturated", "workers.cpu-bound") if k in advice]
        if saturated:
            caps.append((n, f"gpufeed monitor reports {saturated[0]}: more workers would contend for the cores"))
        share = m.worker_cpu_share(n)
        if share is not None and share > 0:
            # Rounded up: the last, partly busy worker still adds what the
            # cores have left (and a change that does not help is undone).
            cpu_cap = max(1, math.ceil(self.budget.cpus / share - 1e-9))
            caps.append((cpu_cap, f"the CPU budget: workers spend {share:.0%} of their time on CPU and "
                                  f"{self.budget.cpus:g} cores hold {cpu_cap} of them"))
        mem = self._memory_cap(m, self.prefetch)
        if mem is not None:
            caps.append((mem, f"the memory budget {self.budget.memory_bytes >> 20} MiB holds {mem} workers"))
        target = need
        for cap, cap_why in caps:
            if cap < target:
                target, why = cap, f"{why}, limited by {cap_why}"
        return target, why


def _children():
    """Pids of this process's children (the workers), from every thread's
    children list; a /proc scan where that list is missing."""
    pids = set()
    base = f"/proc/{os.getpid()}/task"
    try:
        for tid in os.listdir(base):
            with open(f"{base}/{tid}/children", encoding="ascii") as f:
                pids.update(int(p) for p in f.read().split())
        return pids
    except OSError:
        pass
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _read_stat(int(entry))
            if stat and int(stat[1]) == me:
                pids.add(int(entry))
    return pids


def _read_stat(pid):
    """Fields of /proc/PID/stat after the command name (state, ppid, ...)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid):
    stat = _read_stat(pid)
    return (int(stat[11]) + int(stat[12])) / _TICK if stat and len(stat) > 12 else None


def _private_bytes(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            total = 0
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
            return total
    except OSError:
        return None


class ChildCpu:
    """CPU seconds of this process's children over an interval: those reaped
    in it (os.times) plus those still alive, less what the ones alive at the
    start had already used."""

    def __init__(self):
        self.reaped0 = self._reaped()
        self.alive0 = {pid: c for pid in _children() if (c := _cpu_s(pid)) is not None}

    @staticmethod
    def _reaped():
        t = os.times()
        return t.children_user + t.children_system

    def seconds(self):
        alive = {pid: c for pid in _children() if (c := _cpu_s(pid)) is not None}
        return (self._reaped() - self.reaped0) + sum(alive.values()) - sum(self.alive0.values())


def _tensor_bytes(batch):
    """Bytes of the tensors in a batch (nested lists, tuples and dicts)."""
    if hasattr(batch, "element_size") and hasattr(batch, "nelement"):
        return batch.element_size() * batch.nelement()
    if isinstance(batch, dict):
        return sum(_tensor_bytes(v) for v in batch.values())
    if isinstance(batch, (list, tuple)):
        return sum(_tensor_bytes(v) for v in batch)
    return 0


class AdaptiveLoader:
    """An iterable over batches that re-creates its DataLoader between epochs.

    make_loader(num_workers, prefetch_factor) -> a DataLoader (or any
    iterable of batches). num_workers / prefetch_factor: the start (default:
    the config's dataloader section, else 2 and 2). config: a gpufeed tune
    config (path or dict) for the start and the budget. advice: a gpufeed
    monitor --jsonl file read between epochs. budget: a Budget (default:
    budget_for(config, max_workers=max_workers)). adapt=False measures and
    records without changing anything. log: called with one line per epoch.
    """

    def __init__(self, make_loader, num_workers=None, prefetch_factor=None, config=None, advice=None,
                 budget=None, max_workers=None, adapt=True, log=None):
        cfg = gpufeed_config.load(config) if isinstance(config, str) else config
        dl = (cfg or {}).get("dataloader", {})
        workers = num_workers if num_workers is not None else dl.get("num_workers", 2)
        prefetch = prefetch_factor if prefetch_factor is not None else dl.get("prefetch_factor", 2)
        if workers < 0 or prefetch < 1:
            raise ValueError(f"num_workers {workers} / prefetch_factor {prefetch}: need >= 0 and >= 1")
        self._make = make_loader
        self.budget = budget or budget_for(cfg, max_workers=max_workers)
        self.policy = Policy(workers, prefetch, self.budget)
        self.advice = advice
        self.adapt = adapt
        self.log = log
        self.history = []
        self._loader = None
        self._loader_config = None

    @property
    def num_workers(self):
        return self.policy.workers

    @property
    def prefetch_factor(self):
        return self.policy.prefetch

    @property
    def loader(self):
        """The DataLoader of the coming (or current) epoch."""
        config = (self.policy.workers, self.policy.prefetch)
        if self._loader is None or self._loader_config != config:
            self._loader = self._make(*config)
            self._loader_config = config
        return self._loader

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        return self._epoch()

    def _epoch(self):
        loader = self.loader
        workers = self.policy.workers
        cpu = ChildCpu()
        clock = time.monotonic
        start = clock()
        batches = 0
        first_wait = steady_wait = 0.0
        steady_start = steady_end = None
        batch_bytes = None
        private = None
        it = iter(loader)
        try:
            while True:
                asked = clock()
                try:
                    batch = next(it)
                except StopIteration:
                    steady_end = asked
                    break
                got = clock()
                batches += 1
                if steady_start is None:
                    first_wait, steady_start = got - start, got
                    batch_bytes = _tensor_bytes(batch)
                else:
                    steady_wait += got - asked
                if batches == MIN_BATCHES and workers > 0:
                    sizes = [b for pid in _children() if (b := _private_bytes(pid))]
                    private = max(sizes) if sizes else None
                yield batch
        finally:
            if steady_end is None:
                steady_end = clock()  # the loop stopped early: judge what it saw
            del it
            wall = (steady_end - steady_start) if steady_start is not None else 0.0
            m = Measurement(batches, first_wait, wall, steady_wait, cpu.seconds() if workers > 0 else 0.0,
                            batch_bytes, private)
            self._end_epoch(m)

    def _end_epoch(self, m):
        workers, prefetch = self.policy.workers, self.policy.prefetch
        if self.adapt:
            advice = read_advice(self.advice) if self.advice else {}
            nw, np_, action, because = self.policy.decide(m, advice)
        else:
            nw, np_, action, because = workers, prefetch, "hold", "adaptation is off"
        record = EpochRecord(len(self.history) + 1, workers, prefetch, m, nw, np_, action, because)
        self.history.append(record)
        if self.log:
            self.log(record.summary())
