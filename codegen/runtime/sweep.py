"""Parameter sweeps on Dask: one build, every combination of parameters a task, results stacked per run.

    res = codegen.sweep(model, {"bodies.link1.mass": np.linspace(1, 2, 11), "gravity.1": [-9.81, -1.62]},
                        t_end=2.0, dt=1e-3, workers=2, out="sweep.npz")
    res["q"]             # runs x nt x nq, runs in grid order (the last path varies fastest)
    res["param_values"]  # runs x n_params, columns named by res["param_names"]

The kernel is built (or found in the cache) once in the calling process. Each Dask worker thread loads it once,
keeps the System for the build key, and per task only sets the numbers (System.update_model: same topology)
and integrates; the compiled integrators release the GIL. Workers: a dask.distributed LocalCluster on this
machine (``workers`` processes, one thread each; ``processes=False``: threads of this process), an existing
scheduler (``scheduler="tcp://host:8786"``: the workers need mbgen installed, and a C compiler unless they
share the build cache folder), or a ``client`` you pass. Results go to memory and ``out=*.npz``, or straight
to a Zarr store (``out=*.zarr``) one run at a time, for sweeps larger than memory.

A run that diverges keeps its samples up to the failure (NaN after it); ``ok`` is False for it and
``error`` holds the message.
"""
from __future__ import annotations

import json
import math
import os
import sys
import shutil
import tempfile
import threading
import time
import uuid
from typing import Optional, Sequence

import numpy as np

from .params import ParamError, checked_rows, grid
from .result import atomic_write

SWEEP_EXTRA = "pip install 'mbgen[sweep]' (dask[distributed], zarr)"
NAME_ARRAYS = ("coord_names", "velocity_names", "body_names", "joint_names", "node_names")
_LOCAL = threading.local()            # per worker thread: build key -> System


def _worker_system(model, spec):
    """The System of this worker thread for the build key: loaded once per thread, not per task."""
    from .system import build
    systems = _LOCAL.__dict__.setdefault("systems", {})
    s = systems.get(spec["key"])
    loaded = s is None
    if loaded:
        s = build(model, spec["algorithm"], cache_dir=spec["cache_dir"], **spec["options"])
        systems[spec["key"]] = s
    return s, loaded


def _worker_loader(s, model, spec, names):
    """The fast loader of this worker thread for this sweep (codegen.runtime.fastparams): made once per sweep."""
    from .fastparams import FastLoader
    key = (spec.get("sweep"), spec["key"], id(s), tuple(names))
    cur = getattr(_LOCAL, "loader", None)
    if cur is None or cur[0] != key or key[0] is None:
        cur = (key, FastLoader(s, model, names))
        _LOCAL.loader = cur                      # one sweep's loader at a time (its prototype model)
    return cur[1]


def run_task(model, spec, names, values, index, sim, fields):
    """One run on a worker: set the numbers, integrate, return the per-sample arrays (a plain dict)."""
    from .integrate import SimulationDiverged
    s, loaded = _worker_system(model, spec)
    _worker_loader(s, model, spec, names).load(values)      # as s.update_model(with_params(model, names, values))
    t0 = time.perf_counter()
    error = ""
    try:
        res = s.simulate(**sim, keep_partial=True)
        if res.meta.get("partial"):
            error = res.meta["diverged"]
    except SimulationDiverged as e:               # diverged before the first sample
        res, error = None, str(e)
    wall = time.perf_counter() - t0
    arrays = {}
    if res is not None:
        arrays = {k: v for k, v in res.arrays().items() if k in fields}
    return {"index": index, "arrays": arrays, "error": error, "wall": wall, "loaded": loaded,
            "worker": f"{os.getpid()}:{threading.get_ident()}"}


def task_failed(e) -> str:
    """The error of a run whose task failed outside its simulation (a refused number, a worker killed)."""
    return f"the run's task failed: {type(e).__name__}: {' '.join(str(e).split())[:200]}"


def run_chunk(model, spec, names, values, start, sim, shapes):
    """Run runs start .. start + len(values) - 1 on one worker, one after the other.

    Each with run_task: their arrays
    stacked (NaN where a run stopped early or failed), errors, wall times. A run that fails outside its
    simulation is marked failed and the others go on."""
    n = len(values)
    s, loaded = _worker_system(model, spec)
    out = {k: np.full((n,) + tuple(sh), np.nan) for k, sh in shapes.items()}
    errors, wall = [""] * n, np.zeros(n)
    for i in range(n):
        try:
            r = run_task(model, spec, names, np.asarray(values[i], float).tolist(), start + i, sim, tuple(shapes))
        except Exception as e:
            errors[i] = task_failed(e)
            continue
        for k, v in r["arrays"].items():
            if k in out:
                out[k][i, :v.shape[0]] = v
        errors[i], wall[i] = r["error"], r["wall"]
    return {"start": start, "arrays": out, "error": errors, "wall": wall, "loaded": loaded,
            "worker": f"{os.getpid()}:{threading.get_ident()}"}


INFLIGHT_PER_WORKER = 4         # tasks per worker submitted ahead (a sweep submits its chunks in this window)


def chunk_size(runs: int, workers: int, run_bytes: float, per_worker: int = 4, most: int = 1000,
               max_bytes: float = 32e6) -> int:
    """The number of runs per task.

    A few tasks per worker (Dask's per-task cost spread over many runs), at most ``most`` (the
    progress bar moves, a dead worker loses few runs) and ``max_bytes`` of results per task."""
    c = math.ceil(runs / (max(1, workers) * per_worker))
    return max(1, min(c, most, int(max_bytes // max(run_bytes, 1.0))))


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _time_series(result, nt):
    """Names and arrays of a Result that have one row per sample (q, u, body_com, energies, ...)."""
    return {k: v for k, v in result.arrays().items()
            if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == nt and k != "t" and v.dtype.kind == "f"}


class _Store:
    """Where the stacked arrays go: memory (and an NPZ at the end) or a Zarr group written run by run."""

    def __init__(self, out, runs, template, meta):
        self.out, self.runs = out, runs
        self.zarr = out is not None and os.fspath(out).rstrip("/").endswith(".zarr")
        shapes = {k: (runs,) + v.shape for k, v in template.items()}
        if self.zarr:
            try:
                import zarr
            except ImportError:
                raise ValueError(f"Zarr output needs zarr: {SWEEP_EXTRA}") from None
            self.final = os.path.abspath(os.fspath(out).rstrip("/"))
            if os.path.lexists(self.final) and not _is_zarr(self.final):
                raise ValueError(f"{out}: exists and is not a Zarr store; not replaced")
            os.makedirs(os.path.dirname(self.final), exist_ok=True)
            self.tmp = tempfile.mkdtemp(prefix=".tmp.", suffix=".zarr", dir=os.path.dirname(self.final))
            try:                       # (a signal while the store is laid out: before the caller can abort it)
                self.group = zarr.open_group(self.tmp, mode="w")
                create = getattr(self.group, "create_array", None) or self.group.create_dataset
                self.arrays = {k: create(k, shape=sh, chunks=(1,) + sh[1:], dtype="f8", fill_value=np.nan)
                               for k, sh in shapes.items()}
            except BaseException:
                shutil.rmtree(self.tmp, ignore_errors=True)
                raise
        else:
            self.arrays = {k: np.full(sh, np.nan) for k, sh in shapes.items()}
        self.meta = meta

    def put(self, index, arrays):
        for k, v in arrays.items():
            if k in self.arrays:
                n = v.shape[0]                                 # a diverged run: fewer samples, NaN after
                if n == self.arrays[k].shape[1]:
                    self.arrays[k][index] = v
                else:
                    row = np.full(self.arrays[k].shape[1:], np.nan)
                    row[:n] = v
                    self.arrays[k][index] = row

    def put_block(self, start, arrays):
        """The stacked arrays of runs start, start + 1, ... (a chunk: full rows, NaN-padded)."""
        for k, v in arrays.items():
            if k in self.arrays:
                self.arrays[k][start:start + v.shape[0]] = v

    def finish(self, extra: dict) -> dict:
        """extra: small arrays (t, names, param values, ok, error, wall_time) and meta."""
        if self.zarr:
            create = getattr(self.group, "create_array", None) or self.group.create_dataset
            for k, v in extra.items():
                v = np.asarray(v)
                if v.dtype.kind in "US":
                    self.group.attrs[k] = v.tolist()
                else:
                    a = create(k, shape=v.shape, dtype=v.dtype)
                    a[...] = v
            self.group.attrs["meta"] = self.meta
            if os.path.lexists(self.final):
                shutil.rmtree(self.final)
            os.replace(self.tmp, self.final)
            return load_sweep(self.final)
        d = dict(self.arrays)
        d.update({k: np.asarray(v) for k, v in extra.items()})
        d["meta"] = np.array(json.dumps(self.meta))
        if self.out is not None:
            atomic_write(os.fspath(self.out), lambda fh: np.savez_compressed(fh, **d))
        d["meta"] = self.meta
        return d

    def abort(self):
        if self.zarr and os.path.isdir(self.tmp):
            shutil.rmtree(self.tmp, ignore_errors=True)


def _plain(x):
    """JSON for numpy scalars and arrays in the metadata."""
    return x.tolist() if isinstance(x, (np.ndarray, np.generic)) else str(x)


def _is_zarr(path):
    return os.path.isdir(path) and any(os.path.exists(os.path.join(path, f)) for f in ("zarr.json", ".zgroup"))


def load_sweep(path) -> dict:
    """The arrays of a sweep file: an NPZ (numpy arrays) or a Zarr store.

    Zarr arrays are read on access; the names and meta come from the store's attributes.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file or ``.zarr`` store written by sweep.

    Returns
    -------
    dict
        The arrays of sweep's result by key (t, the fields, param_names, param_values, ok, error, wall_time,
        the name arrays) and ``meta`` (a dict).
    """
    path = os.fspath(path)
    if path.rstrip("/").endswith(".zarr"):
        import zarr
        g = zarr.open_group(path, mode="r")
        d = {k: g[k] for k in g.array_keys()}
        for k, v in g.attrs.items():
            d[k] = v if k == "meta" else np.array(v)
        return d
    with np.load(path, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    d["meta"] = json.loads(str(d["meta"]))
    return d


def _client(Client, scheduler, timeout):
    try:
        return Client(scheduler, timeout=timeout)
    except Exception as e:           # OSError, TimeoutError, ValueError of an address Dask cannot parse, ...
        return e


def quiet_shutdown():
    """Silence Dask's loggers before a cluster is closed after Ctrl-C or SIGTERM.

    Tasks cancelled and scatters
    cut short log tracebacks and warnings there, where one line ('mbgen: interrupted') is the message."""
    import logging
    for name in ("distributed", "asyncio", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def connect(client=None, scheduler=None, workers=None, processes=True, timeout: float = 10.0):
    """A Dask client to run on, and the things to close after.

    The given client, one connected to ``scheduler`` (ValueError naming it when it
    does not answer within ``timeout`` seconds), or a new LocalCluster of ``workers`` (default: CPUs) one-thread
    workers."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError(f"sweeps run on Dask: {SWEEP_EXTRA}") from None
    if client is not None:
        return client, []
    if scheduler:
        import threading
        got = []                     # Client(timeout=) bounds the connection, not a handshake left unanswered:
        t = threading.Thread(target=lambda: got.append(_client(Client, scheduler, timeout)), daemon=True)
        t.start()                    # so the whole connection runs in a thread given `timeout` seconds
        t.join(timeout + 1.0)
        if not got:
            raise ValueError(f"--scheduler {scheduler}: no answer within {timeout:g} s (--scheduler-timeout)")
        if isinstance(got[0], Exception):
            raise ValueError(f"--scheduler {scheduler}: cannot connect ({' '.join(str(got[0]).split())[:200]})")
        try:
            got[0].wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            got[0].close()
            raise ValueError(f"--scheduler {scheduler}: the scheduler has no workers (none joined within {timeout:g} s, "
                             f"--scheduler-timeout)") from None
        return got[0], [got[0]]
    n = workers or max(1, os.cpu_count() or 1)
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, dashboard_address=None)
    c = Client(cluster)
    return c, [c, cluster]


def sweep(model, params, t_end: float, dt: float, integrator: Optional[str] = None, algorithm: Optional[str] = None,
          ref_point: Optional[str] = None, options: Optional[dict] = None, cache_dir=None, out=None,
          workers: Optional[int] = None,
          scheduler: Optional[str] = None, client=None, processes: bool = True, fields: Optional[Sequence[str]] = None,
          progress: bool = False, chunk: Optional[int] = None, notify=None, **sim_options) -> dict:
    """Simulate ``model`` for every combination of ``params`` on Dask and stack the results.

    params: {path: values} (the grid of all combinations) or a list of {path: value} (one run each); paths
    such as ``bodies.link1.mass``, ``joints.j1.q0``, ``forces.damper.stiffness``, ``gravity.1`` (see
    codegen/runtime/params.py). algorithm, ref_point, options (e.g. {"form": "general"} for cfa): the build, as
    for codegen.build. sim_options go to System.simulate (rtol, atol, substeps, alpha, ...).
    fields: which per-sample arrays to keep (default: all of them: q, u, body_com, body_quat, energies, and
    the model's extras such as joint_pos). Returns a dict: t, each field (runs x nt x ...), param_names,
    param_values (runs x n_params), ok, error, wall_time (per run), the name arrays and meta; with
    out=*.npz also written there, with out=*.zarr written to the store (and the dict reads from it).

    workers=0 (and no scheduler or client): in this process, without Dask. Runs go to the workers in chunks
    (``chunk`` runs per task; default: a few tasks per worker, at most 1000 runs each), each run only setting
    the numbers that change (codegen.runtime.fastparams). notify(seconds, text): called once with the time the
    whole sweep will take, estimated from the first chunk (default: printed with the progress bar when it is
    above a minute).

    Parameters
    ----------
    model : Model or codegen.model.beams.BeamModel
        The model whose numbers vary.
    params : dict or list of dict
        {path: values} for the full grid, or one {path: value} per run.
    t_end : float
        End time [s] of every run.
    dt : float
        Sampling interval [s].
    integrator : str, optional
        As for System.simulate.
    algorithm, ref_point, options, cache_dir
        The build, as for codegen.build.
    out : str or os.PathLike, optional
        A ``.npz`` file or ``.zarr`` store to write.
    workers : int, optional
        Number of local workers (0: in this process, without Dask).
    scheduler : str, optional
        Address of a Dask scheduler to connect to.
    client : distributed.Client, optional
        A Dask client to use.
    processes : bool, optional
        Local workers as processes (else threads).
    fields : sequence of str, optional
        The per-sample arrays to keep.
    progress : bool, optional
        Show a progress bar.
    chunk : int, optional
        Runs per task.
    notify : callable, optional
        ``notify(seconds, text)`` with the estimated duration.
    **sim_options
        Further options of System.simulate.

    Returns
    -------
    dict
        t (nt,) [s], each field (runs, nt, ...), param_names, param_values (runs, n_params), ok (runs,),
        error (runs,), wall_time (runs,) [s], the name arrays and meta.

    Raises
    ------
    ParamError
        A parameter path or value is invalid (checked before any run starts).
    ValueError
        A bad option, or a scheduler that does not answer.
    BuildError
        The model cannot be built.
    """
    from .fastparams import FastNumbers
    from .integrate import start_state
    from .system import build
    names, values = grid(params)
    checker = FastNumbers(model, names)                # the structure validated once, the numbers per row
    for row in checked_rows(params, values) if isinstance(params, dict) else values:   # before anything starts
        checker.apply(row)
    del checker
    t_start = time.perf_counter()
    system = build(model, algorithm, ref_point=ref_point, cache_dir=cache_dir, **(options or {}))
    spec = {"key": system.build_info["key"], "algorithm": system.algorithm, "options": dict(system.options),
            "cache_dir": cache_dir, "sweep": uuid.uuid4().hex}
    sim = dict(t_end=t_end, dt=dt, integrator=integrator, **sim_options)
    probe = system.simulate(**dict(sim, t_end=dt))           # two samples: the arrays a run returns, and a check
    ts = start_state(system, t_end, dt)[1]
    nt = len(ts)
    series = _time_series(probe, len(probe.t))
    if fields is not None:
        unknown = sorted(set(fields) - set(series))
        if unknown:
            raise ValueError(f"fields {', '.join(unknown)}: not in the results (there are: {', '.join(sorted(series))})")
        series = {k: v for k, v in series.items() if k in fields}
    template = {k: np.zeros((nt,) + v.shape[1:]) for k, v in series.items()}
    runs = len(values)
    inprocess = workers == 0 and scheduler is None and client is None
    meta = {"model": getattr(model, "source", None), "model_name": model.name, "algorithm": system.algorithm,
            "options": system.options, "build_key": spec["key"], "t_end": t_end, "dt": dt,
            "integrator": probe.meta["integrator"], "sim_options": dict(sim_options),
            "runs": runs, "param_names": names,
            "scheduler": "in-process" if inprocess else scheduler or "LocalCluster"}
    meta = json.loads(json.dumps(meta, default=_plain))
    store = _Store(out, runs, template, meta)
    c, close = None, []
    try:
        task_sim = dict(sim, integrator=meta["integrator"])
        shapes = {k: v.shape for k, v in template.items()}
        run_bytes = 8.0 * sum(v.size for v in template.values())
        if inprocess:
            meta["workers"] = 0
            _LOCAL.__dict__.setdefault("systems", {})[spec["key"]] = system       # the kernel loaded: by build
            n_par = 1
        else:
            c, close = connect(client, scheduler, workers, processes)
            meta["workers"] = len(c.scheduler_info().get("workers", {}))
            n_par = max(1, meta["workers"])
        size = int(chunk) if chunk else chunk_size(runs, n_par, run_bytes)
        starts = list(range(0, runs, size))
        meta["chunk"] = size
        ok, err, wall, loads = np.ones(runs, bool), [""] * runs, np.zeros(runs), {}
        from tqdm import tqdm
        t_runs, told = time.perf_counter(), [False]

        def done(r, bar):
            k0 = r["start"]
            n = len(r["error"])
            store.put_block(k0, r["arrays"])
            err[k0:k0 + n] = r["error"]
            ok[k0:k0 + n] = [not e for e in r["error"]]
            wall[k0:k0 + n] = r["wall"]
            loads[r["worker"]] = loads.get(r["worker"], 0) + int(r["loaded"])
            bar.update(n)
            if not told[0]:                      # the whole sweep's time, from the first chunk
                told[0] = True
                left = (time.perf_counter() - t_runs) / (n * min(n_par, len(starts))) * runs
                text = (f"sweep {model.name}: {runs:,} runs will take about {_duration(left)} "
                        f"({runs / left:,.0f} runs/s, estimated from the first {n} runs)")
                if notify is not None:
                    notify(left, text)
                elif progress and left > 60:
                    bar.write(text, file=sys.stderr)

        with tqdm(total=runs, desc=f"sweep {model.name}", unit="run", disable=not progress,
                  mininterval=0.5) as bar:
            if inprocess:
                for k0 in starts:
                    done(run_chunk(model, spec, names, values[k0:k0 + size], k0, task_sim, shapes), bar)
                loads = {w: 1 for w in loads}                   # the one kernel of this process (built above)
            else:
                fut_model = c.scatter(model, broadcast=True)
                from dask.distributed import as_completed
                first, todo = {}, iter(starts)

                def submit():             # the next chunk as a task, or None when every chunk is out
                    k0 = next(todo, None)
                    if k0 is None:
                        return None
                    f = c.submit(run_chunk, fut_model, spec, names, values[k0:k0 + size], k0, task_sim, shapes,
                                 pure=False)
                    first[f.key] = k0
                    return f

                # at most INFLIGHT_PER_WORKER tasks per worker in the scheduler at once: a sweep of 10^6 runs never
                # floods it (the client's connection timed out while thousands of tasks were submitted) and its
                # progress moves from the first chunk on
                window = [f for f in (submit() for _ in range(INFLIGHT_PER_WORKER * n_par)) if f is not None]
                pending = as_completed(window)
                for f in pending:
                    try:
                        r = f.result()
                    except Exception as e:       # its worker died (KilledWorker after Dask's retries) or the task
                        k0 = first[f.key]        # failed outside the runs: its runs marked failed, the others kept
                        n = min(size, runs - k0)
                        r = {"start": k0, "arrays": {}, "error": [task_failed(e)] * n, "wall": np.zeros(n),
                             "loaded": False, "worker": ""}
                    done(r, bar)
                    loads.pop("", None)
                    del first[f.key]
                    f.release()
                    nxt = submit()
                    if nxt is not None:
                        pending.add(nxt)
        meta.update(wall_time_s=time.perf_counter() - t_start, kernel_loads=loads, failed=int((~ok).sum()))
        extra = {"t": ts, "param_names": np.array(names, dtype=str),
                 "param_values": values, "ok": ok, "error": np.array(err, dtype=str), "wall_time": wall}
        extra.update({k: np.asarray(v) for k, v in probe.arrays().items() if k in NAME_ARRAYS})
        return store.finish(extra)
    except BaseException as e:
        store.abort()
        if not isinstance(e, Exception):         # KeyboardInterrupt, SIGTERM: one line, not Dask's log
            quiet_shutdown()
        raise
    finally:
        for x in close:
            x.close()


__all__ = ["ParamError", "chunk_size", "connect", "load_sweep", "quiet_shutdown", "run_chunk", "run_task", "sweep"]
