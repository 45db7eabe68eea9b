#!/usr/bin/env python
"""The M3 flexible pendulum, case B, against Exudyn on the same model, with interleaved rounds.

Model: examples/flexible_pendulum.yaml (M3 case B of models.md: 5 beams of 5 Shabana planar elements each,
L_b = 5 m, A = 4e-4, I = 2e-6, rho = 7800, E = 21 MPa, ground pin at (0, 0), planar revolute joints between
the beams, straight and horizontal at t = 0, gravity -y), 4 s at dt = 1e-3.  Exudyn's model is built from the
numbers of that file (``codegen.load_model``), with its planar ANCF cable element:

  * each beam: ``elements`` ObjectANCFCable2D elements on NodePoint2DSlope1 nodes (r, r' per node: 8
    coordinates per element, cubic Hermite shape functions, as Shabana's planar element), mass per length
    rho A, axial stiffness E A, bending stiffness E I, full Gauss orders (useReducedOrderIntegration = 0),
    gravity as a Gravity load on a MarkerBodyMass of every element;
  * ground pin: CoordinateConstraints of the first node's x and y to a ground node (slope free);
  * the revolute joints: the tip node of beam k and the first node of beam k+1 are separate nodes (each
    beam's slopes independent); their x and y are tied by 2 CoordinateConstraints (an index-3 DAE, as
    bench_rancf.exudyn_model does);
  * explicit RK4 (RK44): Exudyn's explicit solvers eliminate only CoordinateConstraints to ground and refuse
    those between two nodes ("does not have one ground node"), so there the joints are penalty springs,
    CoordinateSpringDamper on x and y with stiffness --penalty (default 5e5 N/m, about the largest that is
    stable at dt = 1e-3; 1e6 diverges).  The ground pin is a penalty spring of the same stiffness too: with
    the pin as an eliminated CoordinateConstraint (eliminateConstraints = True) RK44 converges, as dt -> 0, to
    other dynamics than generalised-alpha (the energy drops by 0.26 J in the first 0.1 s, the pinned node's
    slope lags), apparently because the constrained accelerations are zeroed after solving with the coupled
    consistent mass matrix; that variant is run once, untimed, as ``rk4elim`` in the check.  The gaps the
    penalty leaves open are reported; it is the same model up to that penalty.

Runners, every one once per round, rounds interleaved (start rotated each round), medians reported:

  * ours: ``System.simulate(t_end, dt, integrator="rk4" | "hht")`` (HHT-alpha, alpha = -0.05, Newton with
    the O(n) factorisation); the wall time of the whole call and ``meta["wall_time_s"]`` (the compiled loop);
  * Exudyn: ``mbs.SolveDynamic`` with generalised-alpha (its default implicit solver: spectral radius 0.9,
    modified Newton) and with RK44 (fixed step, computeEndOfStepAccelerations off), each with the sparse
    (EigenSparse) and the dense (EigenDense, and EXUdense, its default) linear solvers, each in Exudyn's
    default module (exudynCPP) and in its fast module (exudynCPPfast: no range checks, AVX2).  Exudyn runs
    in two worker processes (the module is chosen at import), one per module; the model is rebuilt and
    assembled before every run, not timed; one sensor (tip position, every step) is stored in memory, no
    solution file, no rendering, one thread.  Timed: the wall time of the ``SolveDynamic`` call, its process
    CPU time and Exudyn's own solver timer (``timer.total``).

Physics check, before timing: tip position at 1, 2, 4 s of every Exudyn variant against ours (RK4), |dr| / L
with L = 25 m, and the maximum over the run; the total energy (kinetic + elastic + gravity, + penalty
springs) of Exudyn's GA and RK4 runs (sensors: its per-element KineticEnergy and PotentialEnergy, gravity
from the nodal coordinates) against ours.  A run that fails, is not finite or whose tip parts from ours by
more than --tol (default 5 % of L; the two element formulations differ by about 2 % of L (Euclidean; 1.6 % per
coordinate, as results/rancf.md measures it) late in the run) stops the script with ``VERIFICATION FAILED``
(exit status 2).

    python benchmarks/bench_exudyn.py                   # 7 rounds of 4 s runs: ~1-2 min
    python benchmarks/bench_exudyn.py --quick           # 3 rounds
    python benchmarks/bench_exudyn.py --t-end 0.1 --rounds 2 --out-dir /tmp/x    # a smoke test
    git archive REV | tar -x -C /tmp/tree        # our side from another revision (Exudyn's is the same):
    python benchmarks/bench_exudyn.py --tree /tmp/tree --tree-rev REV

Writes results/exudyn.{json,md} (``--out-dir``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_MODEL = ROOT / "examples" / "flexible_pendulum.yaml"
TAG = "@@EXUDYN@@ "                   # prefix of the worker's answers (Exudyn prints to stdout on import)
CHECK_TIMES = (1.0, 2.0, 4.0)


def log(*a):
    print(*a, flush=True)


# ============================================================================================ worker side
def exudyn_model(spec: dict, penalty: float | None, energy: bool = False, penalty_pin: bool = True):
    """spec: {"beams": [{length, elements, E, A, I, rho, angle}], "pin": [x, y], "gravity": [gx, gy]}.
    penalty None: pin and joints as CoordinateConstraints; else CoordinateSpringDamper of that stiffness on x
    and y for the joints, and for the pin too unless penalty_pin is False (then a CoordinateConstraint)."""
    import exudyn as exu
    from exudyn.itemInterface import (
        CoordinateConstraint,
        CoordinateSpringDamper,
        Gravity,
        MarkerBodyMass,
        MarkerNodeCoordinate,
        NodePoint2DSlope1,
        NodePointGround,
        ObjectANCFCable2D,
        SensorBody,
        SensorNode,
    )
    OV = exu.OutputVariableType
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    g = list(spec["gravity"]) + [0.0]
    start = np.array(spec["pin"], float)
    nodes, elems, refs = [], [], []
    for b in spec["beams"]:
        d = np.array([np.cos(b["angle"]), np.sin(b["angle"])])
        le = b["length"] / b["elements"]
        ns = []
        for i in range(b["elements"] + 1):
            ref = [*(start + i * le * d), *d]
            ns.append(mbs.AddNode(NodePoint2DSlope1(referenceCoordinates=ref)))
            refs.append(ref)
        for i in range(b["elements"]):
            o = mbs.AddObject(ObjectANCFCable2D(length=le, massPerLength=b["rho"] * b["A"],
                                                bendingStiffness=b["E"] * b["I"], axialStiffness=b["E"] * b["A"],
                                                useReducedOrderIntegration=0, nodeNumbers=[ns[i], ns[i + 1]]))
            elems.append((o, le, b["rho"] * b["A"]))
            mbs.AddLoad(Gravity(markerNumber=mbs.AddMarker(MarkerBodyMass(bodyNumber=o)), loadVector=g))
        nodes.append(ns)
        start = start + b["length"] * d
    ground = mbs.AddNode(NodePointGround(referenceCoordinates=[0, 0, 0]))
    mg = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=ground, coordinate=0))
    for c in range(2):                      # ground pin: x, y of the first node fixed (its reference is the pin)
        mc = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nodes[0][0], coordinate=c))
        if penalty is None or not penalty_pin:
            mbs.AddObject(CoordinateConstraint(markerNumbers=[mg, mc]))
        else:
            mbs.AddObject(CoordinateSpringDamper(markerNumbers=[mg, mc], stiffness=penalty, damping=0.0))
    for k in range(len(nodes) - 1):         # revolute joints: shared position, independent slopes
        for c in range(2):
            ma = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nodes[k][-1], coordinate=c))
            mb = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nodes[k + 1][0], coordinate=c))
            if penalty is None:
                mbs.AddObject(CoordinateConstraint(markerNumbers=[ma, mb]))
            else:
                mbs.AddObject(CoordinateSpringDamper(markerNumbers=[ma, mb], stiffness=penalty, damping=0.0))
    sensors = {"tip": mbs.AddSensor(SensorNode(nodeNumber=nodes[-1][-1], storeInternal=True, writeToFile=False,
                                               outputVariableType=OV.Position))}
    if energy:
        sensors["ke"] = [mbs.AddSensor(SensorBody(bodyNumber=o, storeInternal=True, writeToFile=False,
                                                  outputVariableType=OV.KineticEnergy)) for o, _, _ in elems]
        sensors["pe"] = [mbs.AddSensor(SensorBody(bodyNumber=o, storeInternal=True, writeToFile=False,
                                                  outputVariableType=OV.PotentialEnergy)) for o, _, _ in elems]
        flat = [n for ns in nodes for n in ns]
        sensors["q"] = [mbs.AddSensor(SensorNode(nodeNumber=n, storeInternal=True, writeToFile=False,
                                                 outputVariableType=OV.Coordinates)) for n in flat]
    mbs.Assemble()
    info = {"nodes": nodes, "elems": elems, "refs": refs, "n_ode2": int(mbs.systemData.ODE2Size()),
            "n_ae": int(mbs.systemData.AEsize())}
    return SC, mbs, sensors, info


def exudyn_settings(solver: str, linsolver: str, t_end: float, dt: float):
    import exudyn as exu
    ss = exu.SimulationSettings()
    ti = ss.timeIntegration
    ti.numberOfSteps = round(t_end / dt)
    ti.endTime = t_end
    ti.verboseMode = 0
    ti.verboseModeFile = 0
    if solver == "ga":
        ti.solverType = exu.DynamicSolverType.GeneralizedAlpha      # defaults: spectral radius 0.9, mod. Newton
    elif solver in ("rk4", "rk4elim"):
        ti.solverType = exu.DynamicSolverType.RK44
        ti.automaticStepSize = False
        ti.explicit.computeEndOfStepAccelerations = False           # True calls the RHS once more per step
        ti.explicit.eliminateConstraints = solver == "rk4elim"      # the ground pin as a CoordinateConstraint
    else:
        raise ValueError(solver)
    ss.linearSolver.solverType = getattr(exu.LinearSolverType, linsolver)
    ss.solution.file.write = False
    ss.solution.sensors.writePeriod = dt
    ss.show.statistics = False
    ss.show.computationTime = False
    ss.show.globalTimers = False
    ss.parallel.numberOfThreads = 1
    return ss


def exudyn_run(cmd: dict) -> dict:
    spec, solver, lin = cmd["spec"], cmd["solver"], cmd["linsolver"]
    penalty = cmd["penalty"] if solver.startswith("rk4") else None
    _SC, mbs, sensors, info = exudyn_model(spec, penalty, energy=cmd.get("energy", False),
                                          penalty_pin=solver != "rk4elim")
    ss = exudyn_settings(solver, lin, cmd["t_end"], cmd["dt"])
    ok, err = False, ""
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        ok = bool(mbs.SolveDynamic(ss))
    except Exception as e:                                     # noqa: BLE001 (reported, the caller decides)
        err = f"{type(e).__name__}: {e}"
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"ok": ok, "error": err, "wall_s": wall, "cpu_s": cpu, "n_ode2": info["n_ode2"], "n_ae": info["n_ae"]}
    sol = mbs.sys.get("dynamicSolver") if hasattr(mbs, "sys") else None
    if sol is not None:
        try:
            out["timer_total_s"] = float(sol.timer.total)
            out["newton_iterations"] = int(sol.it.newtonStepsCount)
            out["jacobians"] = int(sol.it.newtonJacobiCount)
            out["steps"] = int(sol.it.currentStepIndex) - 1
        except Exception as e:                                 # noqa: BLE001 (explicit solvers have fewer fields)
            out["solver_stats_missing"] = str(e)
    if not ok:
        return out
    d = mbs.GetSensorStoredData(sensors["tip"])
    out["t_last"] = float(d[-1, 0])
    out["finite"] = bool(np.all(np.isfinite(d)))
    out["tip_at"] = [[float(np.interp(t, d[:, 0], d[:, 1 + c])) for c in range(2)] for t in cmd["check_times"]]
    if cmd.get("path"):
        out["path"] = d[:, :3].tolist()
    if cmd.get("energy"):
        out.update(exudyn_energy(mbs, sensors, info, spec, penalty, solver != "rk4elim"))
    return out


def exudyn_energy(mbs, sensors, info, spec, penalty, penalty_pin) -> dict:
    """Energies on the sensor clock: kinetic and elastic from Exudyn's element outputs; gravity from the nodal
    coordinates (Hermite element: int r dx = le ((r0 + r1) / 2 + le (r0' - r1') / 12)); penalty springs."""
    ke = sum(mbs.GetSensorStoredData(s)[:, 1] for s in sensors["ke"])
    pe = sum(mbs.GetSensorStoredData(s)[:, 1] for s in sensors["pe"])
    t = mbs.GetSensorStoredData(sensors["ke"][0])[:, 0]
    refs = np.array(info["refs"])
    Q = np.stack([mbs.GetSensorStoredData(s)[:, 1:5] for s in sensors["q"]], axis=1) + refs[None]  # (T, nodes, 4)
    g = np.array(spec["gravity"], float)
    vg = np.zeros(len(t))
    gaps = []
    base = 0
    e = 0
    for k, ns in enumerate(info["nodes"]):
        for i in range(len(ns) - 1):
            _, le, mu = info["elems"][e]
            e += 1
            r0, s0, r1, s1 = Q[:, base + i, :2], Q[:, base + i, 2:], Q[:, base + i + 1, :2], Q[:, base + i + 1, 2:]
            vg -= mu * le * (((r0 + r1) / 2 + le * (s0 - s1) / 12) @ g)
        if k + 1 < len(info["nodes"]):
            gaps.append(np.linalg.norm(Q[:, base + len(ns) - 1, :2] - Q[:, base + len(ns), :2], axis=1))
        base += len(ns)
    pin_gap = np.linalg.norm(Q[:, 0, :2] - np.array(spec["pin"], float), axis=1)
    springs = (gaps + [pin_gap]) if penalty_pin else gaps
    vp = np.zeros(len(t)) if penalty is None else sum(0.5 * penalty * gp ** 2 for gp in springs)
    total = ke + pe + vg + vp
    return {"energy_t": t.tolist(), "kinetic": ke.tolist(), "elastic": pe.tolist(), "gravity": vg.tolist(),
            "penalty": vp.tolist() if penalty is not None else None, "total": total.tolist(),
            "max_joint_gap": float(max(gp.max() for gp in gaps)) if gaps else 0.0,
            "max_pin_gap": float(pin_gap.max())}


def worker(module: str) -> int:
    if module == "fast":
        sys.exudynFast = True
    elif module == "default":
        sys.exudynFast = False
    import exudyn
    hello = {"version": exudyn.__version__, "module": getattr(exudyn, "_compiledModuleName", "unknown")}
    print(TAG + json.dumps(hello), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("cmd") == "quit":
            break
        try:
            res = exudyn_run(cmd)
        except Exception as e:                                 # noqa: BLE001
            res = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(TAG + json.dumps(res), flush=True)
    return 0


# ============================================================================================ main side
class Worker:
    def __init__(self, module: str):
        env = dict(os.environ)
        env.pop("EXUDYN_MODULE", None)
        self.p = subprocess.Popen([sys.executable, __file__, "--worker", module], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1, env=env)
        self.hello = self._read()

    def _read(self) -> dict:
        for line in self.p.stdout:
            if line.startswith(TAG):
                return json.loads(line[len(TAG):])
        raise RuntimeError(f"Exudyn worker ended (exit {self.p.wait()})")

    def run(self, **cmd) -> dict:
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        try:
            self.p.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()


def model_spec(m) -> dict:
    """Exudyn's input from our loaded model; checks that it is the chain M3 describes."""
    beams = [{"name": b.name, "length": float(b.length), "elements": int(b.elements), "E": float(b.E),
              "A": float(b.A), "I": float(b.I), "rho": float(b.rho), "angle": float(b.angle)} for b in m.beams]
    names = [b["name"] for b in beams]
    if len(m.joints) != len(beams) or any(j.type != "revolute" for j in m.joints):
        raise SystemExit("bench_exudyn: the model must be a chain of beams joined by revolute joints")
    for k, j in enumerate(m.joints):
        want = "ground" if k == 0 else names[k - 1]
        if j.parent != want or j.child != names[k]:
            raise SystemExit(f"bench_exudyn: joint {j.name}: expected {want} -> {names[k]}")
    if getattr(m, "loads", None):
        raise SystemExit("bench_exudyn: the model has loads; only gravity is mapped")
    return {"beams": beams, "pin": [float(x) for x in m.joints[0].at], "gravity": [float(x) for x in m.gravity]}


def git_commit() -> dict:
    def run(*args):
        try:
            return subprocess.run(["git", *args], check=False, cwd=ROOT, capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    return {"commit": run("rev-parse", "--short", "HEAD") or "unknown",
            "tracked_files_modified": bool(run("status", "--porcelain", "--untracked-files=no"))}


def ours_run(s, integrator, t_end, dt):
    c0, t0 = time.process_time(), time.perf_counter()
    r = s.simulate(t_end, dt, integrator=integrator)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return r, {"wall_s": wall, "cpu_s": cpu, "kernel_s": float(r.meta["wall_time_s"]), "steps": r.meta["steps"]}


def tip_at(t, tip, times):
    return [[float(np.interp(x, t, tip[:, c])) for c in range(2)] for x in times]


def stats(v):
    return {"median": float(np.median(v)), "min": float(np.min(v)), "all": [float(x) for x in v]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", choices=("default", "fast"), help=argparse.SUPPRESS)
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--t-end", type=float, default=4.0)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7, --quick 3)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--penalty", type=float, default=5e5, help="joint penalty stiffness [N/m] of Exudyn's RK44 runs")
    ap.add_argument("--linear-solvers", nargs="+", default=["EigenSparse", "EigenDense", "EXUdense"])
    ap.add_argument("--modules", nargs="+", default=["default", "fast"], choices=("default", "fast"))
    ap.add_argument("--tol", type=float, default=0.05, help="largest tip difference |dr| / L against ours")
    ap.add_argument("--tree", default=None, help="import codegen from DIR, an exported revision (git archive REV | "
                    "tar -x -C DIR), instead of this checkout; --tree-rev REV records which")
    ap.add_argument("--tree-rev", default=None)
    ap.add_argument("--note", action="append", default=[], help="a note for the results files (repeatable)")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default=str(HERE / "results"))
    ap.add_argument("--out-name", default="exudyn")
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.worker)
    a.rounds = a.rounds or (3 if a.quick else 7)

    code_root = Path(a.tree).resolve() if a.tree else ROOT
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(code_root))
    import codegen  # first: bench_recursive puts this checkout in front of sys.path
    if Path(codegen.__file__).resolve().parent.parent != code_root:
        raise SystemExit(f"bench_exudyn: imported codegen from {codegen.__file__}, not from {code_root}")
    from bench_recursive import machine_info

    doc = {"command": "python " + " ".join([os.path.relpath(__file__, os.getcwd())]
                                           + (sys.argv[1:] if argv is None else list(argv))),
           "machine": machine_info(), "git": {**git_commit(), "codegen_from": str(code_root),
                                               "codegen_rev": a.tree_rev if a.tree else None},
           "config": {"model": os.path.relpath(a.model, ROOT), "t_end": a.t_end, "dt": a.dt, "rounds": a.rounds,
                      "penalty_N_per_m": a.penalty, "linear_solvers": a.linear_solvers, "modules": a.modules,
                      "tol_over_L": a.tol, "ours_hht_alpha": -0.05, "exudyn_ga_spectral_radius": 0.9},
           "notes": list(a.note)}
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def save():
        from codegen.runtime import atomic_write
        doc["loadavg_end"] = list(os.getloadavg())
        atomic_write(str(out / f"{a.out_name}.json"), lambda fh: fh.write(json.dumps(doc, indent=1).encode()))
        atomic_write(str(out / f"{a.out_name}.md"), lambda fh: fh.write(markdown(doc).encode()))

    def fail(msg):
        doc["notes"].append("VERIFICATION FAILED: " + msg)
        save()
        print("VERIFICATION FAILED: " + msg, file=sys.stderr)
        raise SystemExit(2)

    m = codegen.load_model(a.model)
    spec = model_spec(m)
    Ltot = sum(b["length"] for b in spec["beams"])
    doc["model"] = {**spec, "L_total": Ltot, "dof_ours": int(m.nv)}
    log(f"model {a.model}: {len(spec['beams'])} beams x {spec['beams'][0]['elements']} elements, "
        f"E = {spec['beams'][0]['E']:g}, L = {Ltot:g} m, {m.nv} DOF (ours)")
    s = codegen.build(m, cache_dir=a.cache_dir)
    times = [t for t in CHECK_TIMES if t <= a.t_end + 1e-12] or [a.t_end]
    doc["check_times"] = times

    workers = {mod: Worker(mod) for mod in a.modules}
    doc["exudyn"] = {mod: w.hello for mod, w in workers.items()}
    log("Exudyn workers: " + ", ".join(f"{k}: {v['module']} {v['version']}" for k, v in doc["exudyn"].items()))
    try:
        # ------------------------------------------------------------------ physics check (untimed)
        ref = {}
        for integ in ("rk4", "hht"):
            r, tm = ours_run(s, integ, a.t_end, a.dt)
            tip = r.node("tip")
            ref["algorithm"] = r.meta.get("algorithm")
            if not (np.all(np.isfinite(r.q)) and abs(r.t[-1] - a.t_end) < 1e-9):
                fail(f"ours {integ}: not finite or stopped early")
            ref[integ] = {"t": r.t, "tip": tip, "ke": r.energy_kinetic, "etot": r.energy_total,
                          "epot": r.energy_potential}
        rt = ref["rk4"]
        doc["ours_algorithm"] = ref["algorithm"]
        kemax = float(np.max(rt["ke"]))
        check = {"ours_rk4": {"tip_at": tip_at(rt["t"], rt["tip"], times),
                              "energy_drift_at": [float(np.interp(x, rt["t"], rt["etot"] - rt["etot"][0]) / kemax)
                                                  for x in times],
                              "energy_drift_max": float(np.max(np.abs(rt["etot"] - rt["etot"][0])) / kemax),
                              "kinetic_at": [float(np.interp(x, rt["t"], rt["ke"])) for x in times]}}
        rh = ref["hht"]
        check["ours_hht"] = {"tip_at": tip_at(rh["t"], rh["tip"], times),
                             "energy_drift_at": [float(np.interp(x, rh["t"], rh["etot"] - rh["etot"][0]) / kemax)
                                                 for x in times],
                             "energy_drift_max": float(np.max(np.abs(rh["etot"] - rh["etot"][0])) / kemax),
                             "kinetic_at": [float(np.interp(x, rh["t"], rh["ke"])) for x in times],
                             "vs_ours_rk4_max_over_L": float(np.max(np.linalg.norm(rh["tip"] - rt["tip"], axis=1))
                                                             / Ltot)}
        runners = []                              # (name, kind, args)
        for integ in ("rk4", "hht"):
            runners.append((f"ours {integ}", "ours", integ))
        for solver in ("ga", "rk4"):
            for lin in a.linear_solvers:
                for mod in a.modules:
                    runners.append((f"exudyn {solver} {lin} {mod}", "exudyn", (solver, lin, mod)))
        extra = [(f"exudyn rk4elim {a.linear_solvers[0]} {a.modules[0]} (check only)", "exudyn",
                  ("rk4elim", a.linear_solvers[0], a.modules[0]))]
        for name, kind, arg in runners + extra:
            if kind != "exudyn":
                continue
            solver, lin, mod = arg
            res = workers[mod].run(spec=spec, solver=solver, linsolver=lin, penalty=a.penalty, t_end=a.t_end,
                                   dt=a.dt, check_times=times, path=True,
                                   energy=(lin == a.linear_solvers[0] and mod == a.modules[0]))
            if solver == "rk4elim":             # documents Exudyn's elimination of the pin; no verdict
                if not res.get("ok") or not res.get("finite"):
                    check[name] = {"ok": False, "error": res.get("error")}
                    continue
            elif not res.get("ok") or not res.get("finite") or res.get("t_last", 0) < a.t_end - 1e-9:
                fail(f"{name}: {res.get('error') or 'not finite or stopped early'}")
            p = np.array(res.pop("path"))
            te = np.column_stack([np.interp(rt["t"], p[:, 0], p[:, 1 + c]) for c in range(2)])
            row = {"tip_at": res["tip_at"], "n_ode2": res["n_ode2"], "n_ae": res["n_ae"],
                   "vs_ours_rk4_at_over_L": [float(np.linalg.norm(np.subtract(e, o)) / Ltot)
                                             for e, o in zip(res["tip_at"], check["ours_rk4"]["tip_at"])],
                   "vs_ours_rk4_max_over_L": float(np.max(np.linalg.norm(te - rt["tip"], axis=1)) / Ltot),
                   "vs_ours_hht_max_over_L": float(np.max(np.linalg.norm(te - rh["tip"], axis=1)) / Ltot)}
            if "total" in res:
                et, tot, ke = np.array(res["energy_t"]), np.array(res["total"]), np.array(res["kinetic"])
                row["energy_drift_at"] = [float(np.interp(x, et, tot - tot[0]) / kemax) for x in times]
                row["energy_drift_max"] = float(np.max(np.abs(tot - tot[0])) / kemax)
                row["kinetic_at"] = [float(np.interp(x, et, ke)) for x in times]
                row["kinetic_vs_ours_at"] = [float((np.interp(x, et, ke) - np.interp(x, rt["t"], rt["ke"])) / kemax)
                                             for x in times]
                row["elastic_at"] = [float(np.interp(x, et, res["elastic"])) for x in times]
                row["max_joint_gap_m"] = res["max_joint_gap"]
                row["max_pin_gap_m"] = res["max_pin_gap"]
            check[name] = row
            log(f"  check {name}: tip vs ours rk4 at {times} s: "
                + ", ".join(f"{100 * v:.3f} %" for v in row["vs_ours_rk4_at_over_L"])
                + f" of L, max {100 * row['vs_ours_rk4_max_over_L']:.3f} %"
                + (f"; energy drift max {row['energy_drift_max']:.1e} of max T, joint gap max "
                   f"{row['max_joint_gap_m']:.2e} m" if "energy_drift_max" in row else ""))
            if row["vs_ours_rk4_max_over_L"] > a.tol and solver != "rk4elim":
                fail(f"{name}: tip differs from ours by {100 * row['vs_ours_rk4_max_over_L']:.2f} % of L")
        doc["check"] = check
        save()

        # ------------------------------------------------------------------ timing, interleaved rounds
        per = {name: [] for name, _, _ in runners}
        for k in range(a.rounds):
            order = runners[k % len(runners):] + runners[:k % len(runners)]
            for name, kind, arg in order:
                if kind == "ours":
                    _, tm = ours_run(s, arg, a.t_end, a.dt)
                else:
                    solver, lin, mod = arg
                    tm = workers[mod].run(spec=spec, solver=solver, linsolver=lin, penalty=a.penalty,
                                          t_end=a.t_end, dt=a.dt, check_times=times)
                    if not tm.get("ok"):
                        fail(f"{name} round {k}: {tm.get('error')}")
                    tm.pop("tip_at", None)
                per[name].append(tm)
            log(f"round {k + 1}/{a.rounds}: " + ", ".join(f"{n} {1e3 * per[n][-1]['wall_s']:.0f}" for n in per)
                + " ms; load " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        timing = {}
        for name, rows in per.items():
            t = {"wall": stats([r["wall_s"] for r in rows]), "cpu": stats([r["cpu_s"] for r in rows])}
            if "kernel_s" in rows[0]:
                t["kernel"] = stats([r["kernel_s"] for r in rows])
            if "timer_total_s" in rows[0]:
                t["exudyn_timer"] = stats([r["timer_total_s"] for r in rows])
            for key in ("steps", "newton_iterations", "jacobians"):
                if key in rows[0]:
                    t[key] = rows[0][key]
            timing[name] = t
        doc["timing"] = timing
        ex = {n: t for n, t in timing.items() if n.startswith("exudyn")}
        fastest = min(ex, key=lambda n: ex[n]["wall"]["median"])
        fastest_exact = min((n for n in ex if " ga " in n), key=lambda n: ex[n]["wall"]["median"])
        fastest_cpu = min(ex, key=lambda n: ex[n]["cpu"]["median"])
        summ = {"exudyn_fastest": fastest, "exudyn_fastest_exact_joints": fastest_exact,
                "exudyn_fastest_cpu": fastest_cpu, "ratios": {}}
        for o in ("ours rk4", "ours hht"):
            summ["ratios"][o] = {
                "wall_call_vs_fastest": timing[o]["wall"]["median"] / ex[fastest]["wall"]["median"],
                "kernel_vs_fastest": timing[o]["kernel"]["median"] / ex[fastest]["wall"]["median"],
                "kernel_vs_fastest_timer": timing[o]["kernel"]["median"] / ex[fastest]["exudyn_timer"]["median"],
                "wall_call_vs_fastest_exact": timing[o]["wall"]["median"] / ex[fastest_exact]["wall"]["median"],
                "cpu_vs_fastest_cpu": timing[o]["cpu"]["median"] / ex[fastest_cpu]["cpu"]["median"],
                "min_wall_vs_min_fastest": timing[o]["wall"]["min"] / min(v["wall"]["min"] for v in ex.values())}
        best = min(("ours rk4", "ours hht"), key=lambda o: timing[o]["wall"]["median"])
        summ["ours_best"] = best
        summ["goal_ratio"] = 0.2
        summ["goal_met"] = summ["ratios"][best]["wall_call_vs_fastest"] <= 0.2
        doc["summary"] = summ
        save()
        log(markdown(doc))
    finally:
        for w in workers.values():
            w.close()
    return 0


# ============================================================================================ report
def _ms(x):
    return f"{1e3 * x:.1f}"


def _sizes(doc) -> str:
    ga = [r for n, r in doc.get("check", {}).items() if " ga " in n and "n_ode2" in r]
    rk = [r for n, r in doc.get("check", {}).items() if " rk4 " in n and "n_ode2" in r]
    if not ga:
        return "?"
    return (f"GA: {ga[0]['n_ode2']} ODE2 + {ga[0]['n_ae']} algebraic"
            + (f"; RK44: {rk[0]['n_ode2']} ODE2 + {rk[0]['n_ae']} algebraic" if rk else ""))


def markdown(doc) -> str:
    mi, c = doc["machine"], doc["config"]
    ex = doc.get("exudyn", {})
    Ltot = doc.get("model", {}).get("L_total", 25.0)
    L = ["# M3 flexible pendulum (case B) against Exudyn", "",
         f"- command: `{doc['command']}`",
         f"- date: {mi['date']}; commit {doc['git']['commit']}"
         + (" (tracked files modified)" if doc["git"]["tracked_files_modified"] else "")
         + (f"; codegen (the generator and our kernels) from an export of "
            f"{doc['git'].get('codegen_rev') or doc['git']['codegen_from']} (`--tree`)"
            if doc["git"].get("codegen_from") and doc["git"]["codegen_from"] != str(ROOT) else ""),
         f"- machine: {mi['cpu']}, {mi['cores']} cores (shared); load average at start "
         f"{', '.join(f'{x:.2f}' for x in mi['loadavg_start'])}"
         + (f", at end {', '.join(f'{x:.2f}' for x in doc['loadavg_end'])}" if doc.get("loadavg_end") else ""),
         f"- versions: python {mi['python']}, numpy {mi['numpy']}, Cython {mi['cython']}, mbgen {mi['mbgen']}, "
         "Exudyn " + ", ".join(f"{v['version']} ({v['module']})" for v in ex.values()),
         (f"- model: `{c['model']}`, {c['t_end']:g} s at dt = {c['dt']:g}; medians of {c['rounds']} interleaved "
         f"rounds (every runner once per round, start rotated)"), ""]
    if doc.get("model"):
        b = doc["model"]["beams"][0]
        L += ["## Model mapping", "",
              (f"{len(doc['model']['beams'])} beams x {b['elements']} elements, L_b = {b['length']:g} m "
              f"(L = {Ltot:g} m), A = {b['A']:g}, I = {b['I']:g}, rho = {b['rho']:g}, E = {b['E']:g}, "
              f"gravity {doc['model']['gravity']}, pin at {doc['model']['pin']}."), "",
              "| | ours (`rancf`) | Exudyn |", "|---|---|---|",
              ("| element | Shabana planar beam, 8 coordinates, Hu & Wang strains (chord frame, closed form) | "
               "ObjectANCFCable2D on NodePoint2DSlope1, 8 coordinates, axial strain norm(r') - 1 and material "
               "curvature, Gauss orders 9 and 5 |"),
              "| ground pin | eliminated (independent coordinates) | CoordinateConstraint x, y of node 0 to ground |",
              ("| joints between beams | eliminated: shared position, own slopes | GA: separate nodes, 2 "
              "CoordinateConstraints each (index-3 DAE); RK44: CoordinateSpringDamper x, y, k = "
              f"{c['penalty_N_per_m']:g} N/m (its explicit solvers refuse node-to-node constraints) |"),
              ("| ground pin in RK44 | | CoordinateSpringDamper x, y to ground, same k (its elimination of the "
              "CoordinateConstraint changes the dynamics: row `rk4elim` below) |"),
              f"| coordinates | {doc['model']['dof_ours']} (ODE) | {_sizes(doc)} |",
              "| gravity | consistent nodal forces | Gravity load on MarkerBodyMass per element |",
              f"| implicit | HHT-alpha, alpha = {c['ours_hht_alpha']}, Newton, O(n) factorisation | "
              f"generalised-alpha, spectral radius {c['exudyn_ga_spectral_radius']}, modified Newton, "
              + " / ".join(c["linear_solvers"]) + " |",
              "| explicit | RK4 | RK44, fixed step, computeEndOfStepAccelerations off |", ""]
    if doc.get("summary"):
        sm, tm = doc["summary"], doc["timing"]
        best = sm["ours_best"]
        rb = sm["ratios"][best]
        L += ["## Result", "",
              (f"- Exudyn's fastest variant (median wall): **{sm['exudyn_fastest']}**, "
              f"{_ms(tm[sm['exudyn_fastest']]['wall']['median'])} ms; with exact joints (GA): "
              f"{sm['exudyn_fastest_exact_joints']}, "
              f"{_ms(tm[sm['exudyn_fastest_exact_joints']]['wall']['median'])} ms"),
              (f"- ours fastest: **{best}**, {_ms(tm[best]['wall']['median'])} ms per call "
              f"({_ms(tm[best]['kernel']['median'])} ms in the compiled loop)"),
              f"- **ratio ours / Exudyn's fastest: {rb['wall_call_vs_fastest']:.3f}** (whole calls, median wall); "
              f"compiled loop only {rb['kernel_vs_fastest']:.3f} (against Exudyn's own solver timer "
              f"{rb['kernel_vs_fastest_timer']:.3f}); process CPU {rb['cpu_vs_fastest_cpu']:.3f}; "
              f"minima {rb['min_wall_vs_min_fastest']:.3f}. Goal <= {sm['goal_ratio']}: "
              + ("**met**" if sm["goal_met"] else "**not met**"), ""]
        L += ["## Times for the whole run [ms]", "",
              ("| runner | wall median | wall min | process CPU median | compiled loop / Exudyn timer | "
              "Newton it. (Jacobians) | ours rk4 / this | ours hht / this |"),
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for n, t in tm.items():
            inner = t.get("kernel") or t.get("exudyn_timer")
            newton = (f"{t['newton_iterations']} ({t['jacobians']})" if "newton_iterations" in t and
                      " ga " in n else "-")
            L.append(f"| {n} | {_ms(t['wall']['median'])} | {_ms(t['wall']['min'])} | {_ms(t['cpu']['median'])} | "
                     f"{_ms(inner['median']) if inner else '-'} | {newton} | "
                     f"{tm['ours rk4']['wall']['median'] / t['wall']['median']:.3f} | "
                     f"{tm['ours hht']['wall']['median'] / t['wall']['median']:.3f} |")
        L += ["", ("Wall: the whole `System.simulate` call (ours; the compiled loop is `meta['wall_time_s']`) and the "
              "whole `mbs.SolveDynamic` call (Exudyn, in its worker process, model built and assembled before, not "
              "timed; its own `timer.total` beside it). Exudyn stores one tip sensor per step, ours the whole state "
              "per step."), ""]
    if doc.get("check"):
        ck = doc["check"]
        times = doc["check_times"]
        L += ["## Physics check", "",
              (f"Tip position [m] at {', '.join(f'{t:g}' for t in times)} s and |dr| / L against ours (RK4), "
              f"L = {Ltot:g} m; max over the run on the 1e-3 s clock:"), "",
              "| run | " + " | ".join(f"tip at {t:g} s" for t in times) + " | "
              + " | ".join(f"vs ours at {t:g} s" for t in times) + " | max vs ours rk4 |",
              "|---|" + "---:|" * (2 * len(times) + 1)]
        o = ck["ours_rk4"]["tip_at"]
        for n, r in ck.items():
            if "tip_at" not in r:
                L.append(f"| {n} | failed: {r.get('error')} |")
                continue
            d = r.get("vs_ours_rk4_at_over_L") or [float(np.linalg.norm(np.subtract(e, q)) / Ltot)
                                                   for e, q in zip(r["tip_at"], o)]
            mx = r.get("vs_ours_rk4_max_over_L", 0.0 if n == "ours_rk4" else None)
            L.append(f"| {n} | " + " | ".join(f"({x:.3f}, {y:.3f})" for x, y in r["tip_at"]) + " | "
                     + " | ".join(f"{100 * v:.3f} %" for v in d) + " | "
                     + (f"{100 * mx:.3f} %" if mx is not None else "-") + " |")
        L += ["", ("Energy (kinetic + elastic + gravity; + penalty springs in Exudyn's RK44 run): change from t = 0 "
              "relative to the largest kinetic energy of ours; kinetic energy [J]:"), "",
              "| run | " + " | ".join(f"dE at {t:g} s" for t in times) + " | max dE | "
              + " | ".join(f"T at {t:g} s" for t in times) + " | max joint gap [m] | max pin gap [m] |",
              "|---|" + "---:|" * (2 * len(times) + 3)]
        for n, r in ck.items():
            if "energy_drift_at" not in r:
                continue
            L.append(f"| {n} | " + " | ".join(f"{v:.1e}" for v in r["energy_drift_at"]) + f" | "
                     f"{r['energy_drift_max']:.1e} | " + " | ".join(f"{v:.1f}" for v in r["kinetic_at"]) + " | "
                     + (f"{r['max_joint_gap_m']:.1e}" if "max_joint_gap_m" in r else "0 (eliminated)") + " | "
                     + (f"{r['max_pin_gap_m']:.1e}" if "max_pin_gap_m" in r else "0 (eliminated)") + " |")
        L.append("")
    if doc.get("notes"):
        L += ["## Notes", ""] + [f"- {n}" for n in doc["notes"]] + [""]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
