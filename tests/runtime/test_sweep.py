"""Parameter sweeps on Dask: every run equals the single simulation with its numbers, the grid order and
stacking, the kernel loaded once per worker, NPZ and Zarr alike, diverged runs marked, paths checked."""
import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.runtime.params import ParamError, check_path, grid, parse_set, parse_values, with_params
from support.systems import EXAMPLES, get_system

pytest.importorskip("dask.distributed")
import dask  # noqa: E402
zarr = pytest.importorskip("zarr")

M1 = EXAMPLES / "balance_pendulum.yaml"
GRID = {"bodies.body1.mass": [1.0, 1.5, 2.0], "joints.hinge3.q0": [0.0, 0.4], "gravity.1": [-9.81, -1.62]}


@pytest.fixture(scope="module")
def m1():
    return codegen.load_model(M1)


@pytest.fixture(scope="module")
def npz_sweep(m1, tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "s.npz"
    res = codegen.sweep(m1, GRID, t_end=0.3, dt=0.01, workers=2, processes=False, out=out)
    return res, out


@pytest.mark.build
def test_every_run_equals_its_single_simulation(m1, npz_sweep):
    res, _ = npz_sweep
    names, values = grid(GRID)
    assert list(res["param_names"]) == names and np.array_equal(res["param_values"], values)
    assert values.shape == (12, 3) and list(values[1]) == [1.0, 0.0, -1.62]       # the last path varies fastest
    assert res["q"].shape == (12, 31, 4) and res["body_com"].shape == (12, 31, 4, 3)
    assert res["energy_kinetic"].shape == (12, 31) and res["joint_pos"].shape == (12, 31, 4, 3)
    assert res["ok"].all() and np.allclose(res["t"], np.arange(31) * 0.01)
    s = get_system(m1)
    for k in (0, 7, 11):
        one = get_system(with_params(m1, names, values[k])).simulate(0.3, 0.01)
        assert np.array_equal(res["q"][k], one.q) and np.array_equal(res["energy_potential"][k], one.energy_potential)
    s.update_model(m1)
    # the numbers matter: the heavier body 1 and the moon gravity give other motions
    assert np.abs(res["q"][0] - res["q"][-1]).max() > 1e-2
    assert np.abs(res["q"][0] - res["q"][1]).max() > 1e-2


@pytest.mark.build
def test_kernel_loaded_once_per_worker_not_per_task(npz_sweep):
    meta = npz_sweep[0]["meta"]
    loads = meta["kernel_loads"]
    assert meta["workers"] == 2 and meta["runs"] == 12
    assert 1 <= len(loads) <= 2 and all(n == 1 for n in loads.values()), loads


@pytest.mark.build
def test_npz_file_and_zarr_store_hold_the_same(m1, npz_sweep, tmp_path):
    res, out = npz_sweep
    f = codegen.load_sweep(out)
    assert set(f) == set(res) and np.array_equal(f["q"], res["q"]) and f["meta"]["build_key"]
    z = codegen.sweep(m1, GRID, t_end=0.3, dt=0.01, workers=2, processes=False, out=tmp_path / "s.zarr")
    assert (tmp_path / "s.zarr").is_dir() and not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
    zz = codegen.load_sweep(tmp_path / "s.zarr")
    assert isinstance(zz["q"], zarr.Array) and zz["q"].chunks == (1, 31, 4)           # one chunk per run
    for k in ("q", "u", "body_quat", "param_values", "ok", "t"):
        assert np.array_equal(np.asarray(zz[k]), res[k]), k
    assert list(zz["param_names"]) == list(res["param_names"]) and list(zz["coord_names"]) == list(res["coord_names"])
    assert list(z["body_names"]) == list(res["body_names"])
    (tmp_path / "plain.zarr").mkdir()                         # a folder of the user's, not a store: kept
    (tmp_path / "plain.zarr" / "keep.txt").write_text("x")
    with pytest.raises(ValueError, match="not a Zarr store"):
        codegen.sweep(m1, {"gravity.1": [-1.0]}, t_end=0.02, dt=0.01, workers=1, processes=False,
                      out=tmp_path / "plain.zarr")
    assert (tmp_path / "plain.zarr" / "keep.txt").read_text() == "x"


@pytest.mark.build
def test_a_diverging_run_is_marked_and_the_others_kept():
    res = codegen.sweep(codegen.models.chain(2), {"gravity.1": [-9.81, -1e9]}, t_end=0.2, dt=0.01, workers=1,
                        processes=False, fields=["q", "energy_kinetic"])
    assert {k for k in res if getattr(res[k], "ndim", 0) >= 2} == {"q", "energy_kinetic", "param_values"}
    assert list(res["ok"]) == [True, False] and "diverged" in res["error"][1] and res["meta"]["failed"] == 1
    assert np.isfinite(res["q"][0]).all() and np.isnan(res["q"][1, -1]).all() and np.isfinite(res["q"][1, 0]).all()


@pytest.mark.build
def test_a_long_sweep_submits_its_chunks_in_a_bounded_window(monkeypatch):
    """Chunks go to the scheduler a few per worker at a time (a sweep of 10^6 runs once submitted every task at
    once, and the client's connection timed out): each task, as it starts, asks the scheduler how many of the sweep's
    tasks it holds; never more than the window, and every run is there, in order."""
    import codegen.runtime.sweep as sw
    from support import sweep_probe
    sweep_probe.counted_chunk.__wrapped__ = sw.run_chunk
    sweep_probe.SEEN.clear()
    seen = sweep_probe.SEEN
    monkeypatch.setattr(sw, "run_chunk", sweep_probe.counted_chunk)
    monkeypatch.setattr(sw, "INFLIGHT_PER_WORKER", 2)
    g = np.linspace(-10.0, -9.0, 24)
    res = codegen.sweep(codegen.models.chain(2), {"gravity.1": g}, t_end=0.02, dt=0.01, workers=1, processes=False,
                        fields=["q"], chunk=1)
    assert len(seen) == 24 and 1 <= max(seen) <= 2, seen
    assert res["ok"].all() and np.array_equal(res["param_values"][:, 0], g)


@pytest.mark.build
def test_a_run_whose_task_dies_is_marked_and_the_others_kept(monkeypatch):
    """A task that fails outside its simulation (its worker killed: Dask's KilledWorker after its retries) marks
    that run failed with NaN rows and the reason; the other runs are kept and returned."""
    import codegen.runtime.sweep as sw
    real = sw.run_task

    def dying(model, spec, names, values, index, *args):
        if index == 1:
            raise RuntimeError("worker killed (simulated)")
        return real(model, spec, names, values, index, *args)
    monkeypatch.setattr(sw, "run_task", dying)
    res = codegen.sweep(codegen.models.chain(2), {"gravity.1": [-9.81, -5.0, -1.62]}, t_end=0.1, dt=0.01, workers=1,
                        processes=False, fields=["q"])
    assert list(res["ok"]) == [True, False, True] and res["meta"]["failed"] == 1
    assert "worker killed (simulated)" in res["error"][1] and np.isnan(res["q"][1]).all()
    assert np.isfinite(res["q"][[0, 2]]).all()


@pytest.mark.build
def test_beam_model_sweep():
    """Beam numbers are parameters too; each run passes the beam-model checks of a file and equals its single run."""
    flex = codegen.load_model(EXAMPLES / "flexible_pendulum.yaml")
    res = codegen.sweep(flex, {"beams.b1.E": [2.1e7, 4.2e7]}, t_end=0.02, dt=1e-3, workers=1, processes=False,
                        fields=["q", "element_coords"])
    assert res["q"].shape == (2, 21, flex.nq) and res["element_coords"].shape == (2, 21, 25, 8)
    one = get_system(with_params(flex, ["beams.b1.E"], [4.2e7]), "rancf").simulate(0.02, 1e-3, integrator="rk4")
    assert np.array_equal(res["q"][1], one.q) and not np.array_equal(res["q"][0], res["q"][1])
    with pytest.raises(ParamError, match=r"beams.b1.E: must be positive"):
        with_params(flex, ["beams.b1.E"], [-1.0])
    with pytest.raises(ParamError, match=r"loads.p.s: no load named 'p' \(the model has no loads\)"):
        check_path(flex, "loads.p.s")
    with pytest.raises(ParamError, match=r"'forces' is not a part of this beam model"):
        check_path(flex, "forces.k.stiffness")


def test_paths_and_values_are_checked(m1):
    assert parse_values("1:2:11")[:2] == [1.0, 1.1] and len(parse_values("1:2:11")) == 11
    assert parse_values("1,2.5,-3") == [1.0, 2.5, -3.0] and parse_set("gravity.1=-1.62") == ("gravity.1", [-1.62])
    for path in ("bodies.body1.mass", "bodies.body1.com.2", "bodies.body1.inertia.ixy", "joints.hinge1.q0",
                 "joints.pin7.parent_frame.pos.0", "gravity.1"):
        check_path(m1, path)
    bad = {"bodies.body9.mass": "no body named 'body9' (there are: body7, body1",
           "bodies.body1.colour": "no number 'colour'", "bodies.body1.com": "needs an index",
           "bodies.body1.com.3": "index '3' outside 0 .. 2", "gravity": "use gravity.0 .. gravity.2",
           "forces.spring.stiffness": "no force named 'spring' (the model has no forces)",
           "beams.b1.E": "'beams' is not a part of this model", "joints.pin7.type": "no number 'type'", "": "empty path"}
    for path, words in bad.items():
        with pytest.raises(ParamError, match=None) as e:
            check_path(m1, path)
        assert words in str(e.value) and (path in str(e.value) or not path), str(e.value)
    for text, words in (("1:2", "START:STOP:COUNT"), ("1:2:x", "COUNT"), ("a,b", "'a' is not a number"),
                        ("1:2:1", "COUNT must be at least 2"), ("nan", "finite"),
                        ("1:2:100000000", "above the limit of 1,000,000 runs")):
        with pytest.raises(ParamError, match=words):
            parse_values(text, "gravity.1")
    with pytest.raises(ParamError, match=r"100,000 x 100,000 = 10,000,000,000 runs: above the limit"):
        grid({"gravity.0": np.zeros(10 ** 5), "gravity.1": np.zeros(10 ** 5)})    # refused before the grid is made
    from codegen.runtime.params import checked_rows
    big = {"bodies.body1.mass": np.linspace(1, 2, 50), "gravity.1": np.linspace(-10, -1, 40)}
    rows = checked_rows(big, grid(big)[1], every_up_to=1000)                      # 2000 runs: each value, corners
    assert len(rows) == 50 + 40 + 4 and [1.0, -1.0] in [list(r) for r in rows]
    with pytest.raises(ParamError, match=r"bodies.body1.mass = -1: .*mass must be"):
        with_params(m1, ["bodies.body1.mass"], [-1.0])
    sym = with_params(m1, ["bodies.body1.inertia.ixy"], [1e-4]).bodies[1].inertia
    assert sym[0, 1] == sym[1, 0] == 1e-4


@pytest.mark.build
def test_cli_sweep(tmp_path, capsys):
    out = tmp_path / "c.npz"
    assert main(["sweep", "chain:2", "--set", "bodies.link1.mass=1:2:3", "--set", "joints.j1.q0=0,0.5",
                 "--t-end", "0.1", "--dt", "0.01", "--workers", "2", "--threads", "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "6 runs (3 x 2 over bodies.link1.mass, joints.j1.q0)" in text and "on 2 workers" in text
    z = np.load(out)
    assert z["q"].shape == (6, 11, 2) and z["param_values"].shape == (6, 2) and z["ok"].all()
    assert np.allclose(z["q"][:, 0, 0], [0, 0.5] * 3)                       # q0 of j1 is each run's start
    cache = tmp_path / "cache"
    cache.mkdir()
    for args, words in ((["--set", "bodies.lnk1.mass=1,2"], "--set bodies.lnk1.mass: no body named 'lnk1'"),
                        (["--set", "bodies.link1.mass=1:2"], "START:STOP:COUNT"),
                        (["--set", "bodies.link1.mass=-1,1"], "mass must be"),
                        (["--set", "gravity.1=1", "--set", "gravity.1=2"], "given twice"),
                        (["--set", "gravity.1=-9.81", "--out", str(tmp_path)], "is a folder"),
                        (["--set", "gravity.1=-9.81", "--scheduler", "tcp://127.0.0.1:9"], "cannot connect")):
        out_args = [] if "--out" in args else ["--out", str(tmp_path / "bad.npz")]
        with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
            rc = main(["sweep", "chain:2", "--cache-dir", str(cache), "--quiet", "--workers", "1", "--threads",
                       *out_args, *args])
        err = capsys.readouterr().err
        assert rc == 2 and words in err, (args, err)
        assert list(cache.iterdir()) == [], "a build started"
    assert main(["sweep", "chain:2", "--quiet", "--workers", "1", "--threads", "--set", "gravity.1=-9.81",
                 "--fields", "q,nope", "--out", str(tmp_path / "bad.npz")]) == 2
    assert "fields nope: not in the results (there are: body_com" in capsys.readouterr().err
    assert not (tmp_path / "bad.npz").exists()
    assert main(["sweep", "chain:2", "--set", "gravity.1=-9.81,-1e9", "--t-end", "0.1", "--dt", "0.01",
                 "--workers", "1", "--threads", "--out", str(tmp_path / "d.npz"), "--quiet"]) == 3
    assert "1 of 2 runs diverged" in capsys.readouterr().err and (tmp_path / "d.npz").is_file()


@pytest.mark.build
def test_process_workers(m1, tmp_path):
    """The default: LocalCluster worker processes, the model shipped to each once, the kernel from the cache."""
    res = codegen.sweep(m1, {"bodies.body1.mass": [1.0, 2.0, 3.0, 4.0]}, t_end=0.05, dt=0.01, workers=2,
                        fields=["q"])
    loads = res["meta"]["kernel_loads"]
    assert res["ok"].all() and sum(loads.values()) == len(loads) <= 2
    assert len({w.split(":")[0] for w in loads}) == len(loads)            # other processes, one thread each


def test_a_scheduler_that_never_answers_times_out(tmp_path, capsys):
    """--scheduler at an address that accepts the connection and never answers: exit 2 after
    --scheduler-timeout, naming the address, before anything is built."""
    import socket
    import time
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        address = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
        t0 = time.perf_counter()
        assert main(["sweep", "chain:2", "--set", "gravity.1=-9.81,-1.62", "--t-end", "0.01", "--quiet",
                     "--scheduler", address, "--scheduler-timeout", "2", "--out", str(tmp_path / "s.npz")]) == 2
        assert time.perf_counter() - t0 < 10
    err = capsys.readouterr().err
    assert f"--scheduler {address}: no answer within 2 s (--scheduler-timeout)" in err
    assert not (tmp_path / "s.npz").exists()


def test_a_scheduler_without_workers_is_named(tmp_path, capsys):
    from dask.distributed import LocalCluster
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        assert main(["sweep", "chain:2", "--set", "gravity.1=-9.81,-1.62", "--t-end", "0.01", "--quiet",
                     "--scheduler", cluster.scheduler_address, "--scheduler-timeout", "1",
                     "--out", str(tmp_path / "s.npz")]) == 2
    assert "the scheduler has no workers (none joined within 1 s" in capsys.readouterr().err


def _outcome(fn):
    """(None, value) or (the exception's type and words, None)."""
    try:
        return None, fn()
    except Exception as e:
        return f"{type(e).__name__}: {e}", None


@pytest.mark.build
def test_fast_path_is_bitwise_the_slow_path(m1):
    """The sweeps' fast path (structure validated once, per run only the changed numbers checked, one plan) gives
    the parameter vector and start state of update_model(with_params(...)) bit for bit, and refuses the same
    runs with the same words; a random sample of runs, a fifth of them refused."""
    from codegen.algorithms.recursive.loops import make_plan
    from codegen.runtime.fastparams import FastLoader, FastNumbers
    rng = np.random.default_rng(27)
    names = ["bodies.body1.mass", "bodies.body3.com.1", "bodies.body5.inertia.ixy", "joints.hinge3.q0",
             "joints.hinge1.parent_frame.pos.0", "gravity.1"]
    fast, slow = FastLoader(codegen.build(m1), m1, names), get_system(m1)
    assert fast.numbers.fast and fast.plan is not None, fast.numbers.why
    refused = 0
    for _ in range(60):                  # refused: a negative or denormal mass, an inertia not positive or too
        v = [rng.choice([1.5, 0.0, 2.0, 1.0, -0.5, 1e-320]), rng.uniform(-1, 1),      # large, a new code pattern
             rng.choice([0.0, 1e-3, -1e-3, 0.2, 1e300]), rng.uniform(-1, 1),             # (offset 0), gravity inf
             rng.choice([-0.5, -0.5, -0.5, 0.25, 0.0]), rng.choice([-9.81] * 9 + [np.inf])]
        e1, _ = _outcome(lambda: fast.load(v))
        e2, _ = _outcome(lambda: slow.update_model(with_params(m1, names, v)))
        assert e1 == e2, (v, e1, e2)
        refused += e1 is not None
        if e1 is None:
            assert fast.system._params().tobytes() == slow._params().tobytes(), v
            assert all(a.tobytes() == b.tobytes() for a, b in zip(fast.system.initial_state(), slow.initial_state()))
    assert 10 <= refused <= 50, refused
    slow.update_model(m1)
    # force elements and closed loops, at the level of the model (no build): the plan's vector, the same refusals
    for spec, names, draw in (
            ("arm7.yaml", ["forces.damp1.damping", "forces.damp2.stiffness", "bodies.link1.inertia.izz"],
             lambda: [rng.choice([0.5, -1.0]), rng.uniform(0, 10), rng.choice([0.1, -1.0, 1e-3])]),
            ("quarter_car.yaml", ["forces.strut.length", "forces.strut.point_a.2", "bodies.wheel.mass"],
             lambda: [rng.choice([0.5, -0.1]), rng.uniform(0.5, 0.7), rng.choice([20.0, 0.0, np.inf])])):
        m = codegen.load_model(EXAMPLES / spec)
        numbers = FastNumbers(m, names)
        assert numbers.fast, numbers.why
        for _ in range(12):
            v = draw()
            e1, p1 = _outcome(lambda: make_plan(numbers.apply(v)).params())
            e2, p2 = _outcome(lambda: make_plan(with_params(m, names, v)).params())
            assert e1 == e2 and (e1 is not None or p1.tobytes() == p2.tobytes()), (spec, v, e1, e2)
    # what the fast path does not check itself goes the slow way, every run
    assert not FastNumbers(m1, ["joints.hinge1.axis.0"]).fast


@pytest.mark.build
def test_in_process_chunks_equal_dask_tasks(m1, npz_sweep):
    """Without Dask (workers=0) and in chunks of any size the runs are those of the Dask sweep, bit for bit; the
    time of the whole sweep is estimated from the first chunk."""
    from codegen.runtime.sweep import chunk_size
    told = []
    res = codegen.sweep(m1, GRID, t_end=0.3, dt=0.01, workers=0, chunk=5, notify=lambda s, text: told.append(text))
    assert res["meta"]["workers"] == 0 and res["meta"]["chunk"] == 5 and res["meta"]["scheduler"] == "in-process"
    for k in ("q", "u", "joint_pos", "energy_kinetic", "param_values", "ok"):
        assert np.array_equal(res[k], npz_sweep[0][k]), k
    assert len(told) == 1 and "12 runs will take about" in told[0]
    assert npz_sweep[0]["meta"]["chunk"] == 2                     # 12 runs on 2 workers: a few chunks each
    assert chunk_size(10 ** 6, 2, 1e3) == 1000 and chunk_size(10 ** 6, 2, 1e6) == 32 and chunk_size(3, 8, 1) == 1


@pytest.mark.build
def test_cli_in_process(tmp_path, capsys):
    out = tmp_path / "p.npz"
    assert main(["sweep", "chain:2", "--set", "bodies.link1.mass=1:2:3", "--set", "joints.j1.q0=0,-1,0.5",
                 "--t-end", "0.1", "--dt", "0.01", "--in-process", "--out", str(out), "--quiet"]) == 0
    assert "9 runs (3 x 3 over bodies.link1.mass, joints.j1.q0)" in capsys.readouterr().out
    z = np.load(out)
    assert z["q"].shape == (9, 11, 2) and z["ok"].all() and np.allclose(z["q"][:, 0, 0], [0, -1, 0.5] * 3)
    assert main(["sweep", "chain:2", "--set", "gravity.1=-1", "--in-process", "--workers", "2", "--quiet",
                 "--out", str(tmp_path / "x.npz")]) == 2
    assert "--in-process runs without Dask" in capsys.readouterr().err
