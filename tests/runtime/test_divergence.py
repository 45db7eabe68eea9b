"""Simulations never lie quietly: divergence (exit 3, SimulationDiverged), the rk4 stability estimate of beam
models (refusal, exit 2, or hht), the model file's `simulation:` defaults, and the energy check (exit 4)."""
import glob
import json
import os
from pathlib import Path

import numpy as np
import pytest

import codegen
from codegen.cli import main
from codegen.model.simulation import parse_simulation
from codegen.algorithms.codes import Fail
from codegen.runtime.integrate import RK4_LIMIT
from support.systems import get_system

STIFF = "examples/flexible_pendulum_stiff.yaml"
SOFT = "examples/flexible_pendulum.yaml"
M1 = "examples/balance_pendulum.yaml"
EXAMPLES = sorted(glob.glob("examples/*.yaml"))


def meta_of(path):
    with np.load(path) as z:
        return json.loads(str(z["meta"]))


# ---------------------------------------------------------------- every shipped example runs as it is

@pytest.mark.build
@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.basename(p) for p in EXAMPLES])
def test_shipped_example_runs_with_its_own_defaults(path, tmp_path, capsys):
    """`mbgen simulate FILE` and nothing else: exit 0, finite results, the file's energy check passes."""
    out = tmp_path / "r.npz"
    rc = main(["simulate", path, "--quiet", "--out", str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    sim = codegen.load_model(path).simulation
    assert {"integrator", "dt", "t_end", "check_energy"} <= set(sim), sim
    meta = meta_of(out)
    assert meta["integrator"] == sim["integrator"] and meta["dt"] == sim["dt"] and meta["t_end"] == sim["t_end"]
    with np.load(out) as z:
        assert np.isclose(z["t"][-1], sim["t_end"])
        for k in ("q", "u", "energy_kinetic", "energy_potential"):
            assert np.all(np.isfinite(z[k])), k
    assert meta["energy_check"] == {"tol": sim["check_energy"], "value": meta["energy"]["value"], "passed": True}
    assert "partial" not in meta and "nan" not in cap.out


# ---------------------------------------------------------------- the cases

@pytest.mark.build
def test_stiff_example_with_rk4_is_refused_or_diverges(tmp_path, capsys):
    """The example's old command with rk4: refused up front (exit 2) with the stable step; with --force it
    diverges (exit 3); never exit 0 with NaN, and no results file either way."""
    out = tmp_path / "s.npz"
    rc = main(["simulate", STIFF, "--integrator", "rk4", "--dt", "1e-3", "--t-end", "4", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "mbgen: error: rk4 at h = dt / substeps = 0.001 s is unstable" in err
    assert "stable rk4 step of this model is 4.1e-05 s" in err and "--integrator hht" in err and "--force" in err
    assert not out.exists()
    rc = main(["simulate", STIFF, "--integrator", "rk4", "--dt", "1e-3", "--t-end", "4", "--force", "--quiet",
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 3, err
    # the first step pumps energy into the axial modes (the state goes NaN at t = 0.031 s): caught at once
    assert "mbgen: error: simulation diverged at t = 0.001 s (sample 1 of 4000, rk4): the energy ran away" in err
    assert "last good state at t = 0 s" in err
    assert "--integrator hht" in err and "4.1e-05 s" in err
    assert not out.exists()


@pytest.mark.build
def test_stiff_example_defaults_run_finite(tmp_path, capsys):
    out = tmp_path / "s.npz"
    assert main(["simulate", STIFF, "--t-end", "0.5", "--quiet", "--out", str(out)]) == 0, capsys.readouterr().err
    meta = meta_of(out)
    assert meta["integrator"] == "hht" and meta["newton_not_converged"] == 0
    with np.load(out) as z:
        assert np.all(np.isfinite(z["q"])) and z["q"].shape[0] == 501


@pytest.mark.build
def test_balance_pendulum_with_a_5_s_step_diverges(tmp_path, capsys):
    out = tmp_path / "m1.npz"
    rc = main(["simulate", M1, "--dt", "5", "--t-end", "10", "--integrator", "rk4", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 3, err
    line = err.splitlines()[0]
    # the first step already pumps 4.8e21 J into a pendulum of 25 J (the state is finite: 1e11 rad/s)
    assert line.startswith("mbgen: error: simulation diverged at t = 5 s (sample 1 of 2, rk4): the energy ran away")
    names = codegen.load_model(M1)
    assert any(n in line for n in names.coord_names + names.velocity_names)       # the coordinate, by name
    assert "last good state at t = 0 s" in line and "smaller --dt or more --substeps" in line
    assert "no results written" in err
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.build
def test_keep_partial_writes_the_good_part(tmp_path, capsys):
    out = tmp_path / "m1.npz"
    rc = main(["simulate", M1, "--dt", "0.5", "--t-end", "10", "--quiet", "--keep-partial", "--out", str(out)])
    cap = capsys.readouterr()
    assert rc == 3
    assert "simulation diverged at t = 1 s" in cap.err and "partial results" in cap.out and str(out) in cap.out
    meta = meta_of(out)
    assert meta["partial"] is True and meta["diverged_at"] == 1.0 and "diverged at t = 1 s" in meta["diverged"]
    r = codegen.load_result(out)
    assert list(r.t) == [0.0, 0.5] and np.all(np.isfinite(r.q)) and "energy_check" not in r.meta
    assert np.abs(r.energy_total - r.energy_total[0]).max() < 1.0                  # the good part is good


@pytest.mark.build
def test_api_raises_or_returns_partial():
    s = get_system(codegen.load_model(M1))
    with pytest.raises(codegen.SimulationDiverged) as ei:
        s.simulate(10.0, 5.0, integrator="rk4")
    e = ei.value
    assert isinstance(e, FloatingPointError) and e.t == 5.0 and e.sample == 1 and e.last_t == 0.0
    assert e.coordinate in s.coord_names + s.velocity_names and e.partial is None
    r = s.simulate(10.0, 5.0, integrator="rk4", keep_partial=True)
    assert r.meta["partial"] and r.meta["diverged_at"] == 5.0 and len(r.t) == 1 and r.divergence.partial is r
    assert codegen.runtime.SimulationDiverged is codegen.SimulationDiverged


@pytest.mark.build
def test_stiff_point_spring_diverges(tmp_path, capsys):
    """A point spring of 1e9 N/m on a 1 kg rod (omega = 3e4 rad/s) at dt = 1e-3: exit 3, no results."""
    yml = tmp_path / "spring.yaml"
    yml.write_text("""name: stiff_spring
gravity: [0, -9.81, 0]
bodies:
  - {name: rod, mass: 1.0, com: [0.5, 0, 0], inertia: [1.0e-4, 0.0834, 0.0834]}
joints:
  - {name: pin, type: revolute, parent: ground, child: rod, axis: [0, 0, 1], q0: 0.1}
forces:
  - {name: k, type: point_spring_damper, body_a: ground, point_a: [1, 0, 0], body_b: rod, point_b: [1, 0, 0],
     stiffness: 1.0e+9, damping: 0, length: 0}
""")
    out = tmp_path / "s.npz"
    rc = main(["simulate", str(yml), "--t-end", "1", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 3, err
    assert "simulation diverged at t = " in err and ("pin.angle" in err or "pin.rate" in err)
    assert not out.exists()
    # the same model at a step it can take (omega = 5.5e4 rad/s, h omega = 0.055): fine, energy conserved
    rc = main(["simulate", str(yml), "--t-end", "0.002", "--dt", "1e-6", "--check-energy", "1e-4", "--quiet",
               "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert meta_of(out)["energy_check"]["passed"] is True


def test_nan_table_value_is_refused_at_load(tmp_path, capsys):
    yml = tmp_path / "nan.yaml"
    yml.write_text("""name: nan_table
bodies:
  - {name: rod, mass: 1.0, com: [0.5, 0, 0], inertia: [1.0e-4, 0.0834, 0.0834]}
joints:
  - {name: pin, type: revolute, parent: ground, child: rod, axis: [0, 0, 1]}
forces:
  - {name: motor, type: joint_force, joint: pin, value: {table: {t: [0, 1, 2], value: [0, .nan, 1]}}}
""")
    with pytest.raises(codegen.ModelError) as ei:
        codegen.load_model(yml)
    assert "table.value" in str(ei.value)
    out = tmp_path / "n.npz"
    assert main(["simulate", str(yml), "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mbgen: error: ") and "nan.yaml" in err and "table.value" in err
    assert not out.exists()


@pytest.mark.build
def test_dopri5_step_collapse_is_detected():
    """A force with a pole at t = 0.3 s: the step size collapses (not NaN); the run stops there."""
    s = get_system(codegen.load_model(M1))
    s.set_hook(lambda t, q, u: np.array([1.0 / (0.3 - t), 0.0, 0.0, 0.0]))
    try:
        with pytest.raises(codegen.SimulationDiverged) as ei:
            s.simulate(1.0, 0.1, integrator="dopri5")
        e = ei.value
        assert e.code == Fail.STEP_COLLAPSED and abs(e.t - 0.3) < 1e-6 and e.sample == 3 and e.last_t == pytest.approx(0.2)
        assert "step size collapsed" in str(e) and "loosen --rtol" in str(e)
        r = s.simulate(1.0, 0.1, integrator="dopri5", keep_partial=True)
        assert len(r.t) == 3 and np.all(np.isfinite(r.q))
    finally:
        s.set_hook(None)
    with pytest.raises(ValueError, match="rtol"):                # unreachable tolerances: refused up front
        s.simulate(1.0, 0.1, integrator="dopri5", rtol=1e-30)


@pytest.mark.build
def test_kernels_report_nan_without_exceptions():
    """Each compiled integrator stops at a non-finite state with fail_code, fail_t, fail_sample set."""
    s = get_system(codegen.load_model(M1))
    q, u = s.initial_state()
    x = np.concatenate([q, u])
    x[s.nq] = np.nan
    out, nok = s.kernel.run_rk4(0.0, x.copy(), 1e-3, 5, 2)
    assert (nok, s.kernel.fail_code, s.kernel.fail_sample) == (0, Fail.NONFINITE, 0)
    assert s.kernel.fail_t == pytest.approx(1e-3)
    assert np.all(np.isnan(out))
    out, t, h, st, nok = s.kernel.run_dopri5(0.0, x.copy(), 1e-3, np.array([0.1, 0.2]), 1e-8, 1e-10, 1.0)
    assert (nok, s.kernel.fail_code, s.kernel.fail_index, s.kernel.fail_sample) == (0, Fail.NONFINITE, 0, 0)
    assert {c.name: int(c) for c in s.module.Fail} == {f"FAIL_{c.name}": int(c) for c in Fail}    # one definition
    assert np.all(np.isnan(out)) and t == 0.0
    b = get_system(codegen.load_model(SOFT))
    q, u = b.initial_state()
    xb = np.concatenate([q, u])
    acc = b.forward_dynamics(q, u)
    xb[3] = np.inf
    out, st = b.kernel.integrate_hht(0.0, xb, acc, 1e-3, 4, 1, -0.05, 1e-6, 20)
    assert b.kernel.fail_code in (Fail.NONFINITE, Fail.NOT_PD) and b.kernel.fail_sample == 0 and np.all(np.isnan(out))   # 4: not pos. def.
    out, nok = b.kernel.run_rk4(0.0, np.concatenate([q, u]), 1e-3, 4, 1)       # and it resets for a good run
    assert nok == 4 and b.kernel.fail_code == Fail.NONE and np.all(np.isfinite(out))


# ---------------------------------------------------------------- stiffness estimate, integrator choice

@pytest.mark.build
def test_stiffness_estimate_of_the_beam_examples():
    """omega_max: largest generalized eigenvalue of (K_T, M_E) over the elements; it bounds the assembled
    system's highest frequency (finite-difference Jacobian of the forward dynamics) from above."""
    soft = get_system(codegen.load_model(SOFT), "rancf")
    om = soft.omega_max()
    b = soft.model.beams[0]
    axial = 2.0 / (b.length / b.elements) * np.sqrt(b.E / b.rho)
    assert 6.4 < om / axial < 6.6                          # cubic ANCF element, consistent mass
    q, u = soft.initial_state()
    J = np.empty((soft.nq, soft.nq))
    for k in range(soft.nq):
        dq = np.zeros(soft.nq)
        dq[k] = 1e-7
        J[:, k] = (soft.forward_dynamics(q + dq, u) - soft.forward_dynamics(q - dq, u)) / 2e-7
    assembled = np.sqrt(np.linalg.eigvals(-J).real.max())
    assert 0.6 * om < assembled <= om                      # measured 497 vs 677 rad/s
    assert soft.stable_step() == pytest.approx(RK4_LIMIT / om)
    soft.update_model(codegen.load_model(STIFF))           # E x 1e4: omega x 100
    try:
        assert soft.stable_step() == pytest.approx(4.11e-5, rel=1e-2)
    finally:
        soft.update_model(codegen.load_model(SOFT))
    assert get_system(codegen.load_model(M1)).stable_step() is None


@pytest.mark.build
def test_beam_default_integrator_follows_the_stiffness(tmp_path, capsys):
    """No integrator on the command line nor in the file: rk4 if it is stable at dt / substeps, else hht with
    one line saying why."""
    text = Path(STIFF).read_text()
    bare = tmp_path / "stiff_bare.yaml"
    bare.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("simulation:")) + "\n")
    out = tmp_path / "b.npz"
    assert main(["simulate", str(bare), "--t-end", "0.05", "--quiet", "--out", str(out)]) == 0
    text_out = capsys.readouterr().out
    assert "integrator hht: rk4 at h = 0.001 s would be unstable" in text_out and "4.1e-05 s" in text_out
    assert meta_of(out)["integrator"] == "hht"
    assert main(["simulate", str(bare), "--t-end", "0.01", "--substeps", "25", "--quiet", "--out", str(out)]) == 0
    assert "integrator hht" not in capsys.readouterr().out and meta_of(out)["integrator"] == "rk4"
    s = get_system(codegen.load_model(str(bare)), "rancf")
    r = s.simulate(0.01, 1e-3)                                          # the API chooses the same way
    assert r.meta["integrator"] == "hht" and "rk4 at h = 0.001 s would be unstable" in r.meta["integrator_choice"]


# ---------------------------------------------------------------- `simulation:` section, precedence

@pytest.mark.build
def test_option_beats_file_beats_default(tmp_path, capsys):
    out = tmp_path / "m1.npz"
    assert main(["simulate", M1, "--t-end", "0.1", "--quiet", "--out", str(out)]) == 0
    meta = meta_of(out)
    assert meta["t_end"] == 0.1 and meta["dt"] == 1e-3 and meta["integrator"] == "rk4"    # dt from the file
    assert meta["energy_check"]["tol"] == 1e-4 and meta["rtol"] is None
    assert main(["simulate", M1, "--t-end", "0.1", "--check-energy", "off", "--quiet", "--out", str(out)]) == 0
    assert "energy_check" not in meta_of(out) and "energy" in meta_of(out)
    assert main(["simulate", "chain:2", "--t-end", "0.01", "--quiet", "--out", str(out)]) == 0    # no file
    meta = meta_of(out)
    assert meta["dt"] == 1e-3 and meta["integrator"] == "rk4" and "energy_check" not in meta


@pytest.mark.parametrize("section, field, words", [
    ("{dt: -1}", "simulation.dt", "positive"),
    ("{dt: 1e-3, t_end: abc}", "simulation.t_end", "number"),
    ("{integrator: verlet}", "simulation.integrator", "rk4"),
    ("{integrator: hht}", "simulation.integrator", "flexible-beam"),
    ("{substeps: 2.5}", "simulation.substeps", "integer"),
    ("{substeps: 1000000000000}", "simulation.substeps", "[1, 1,000,000]"),     # the command line's limit
    ("{hht_alpha: -0.5}", "simulation.hht_alpha", "[-1/3, 0]"),
    ("{rtol: 1e-20}", "simulation.rtol", "1e-14"),
    ("{rtol: 2}", "simulation.rtol", "[1e-14, 1)"),
    ("{check_energy: 0}", "simulation.check_energy", "positive"),
    ("{tend: 3}", "simulation", "unknown keys"),
    ("[1, 2]", "simulation", "expected a mapping"),
])
def test_bad_simulation_section_names_file_and_field(section, field, words, tmp_path, capsys):
    yml = tmp_path / "bad.yaml"
    yml.write_text(Path(M1).read_text().split("\nsimulation:")[0] + f"\nsimulation: {section}\n")
    with pytest.raises(codegen.ModelError) as ei:
        codegen.load_model(yml)
    assert ei.value.field == field and words in str(ei.value) and str(yml) in str(ei.value)
    assert main(["simulate", str(yml), "--quiet", "--out", str(tmp_path / "x.npz")]) == 2
    assert f"bad.yaml: {field}: " in capsys.readouterr().err


def test_simulation_section_parsing():
    assert parse_simulation(None, "f", beams=False) == {}
    s = parse_simulation({"dt": "1e-3", "substeps": 2, "check_energy": None, "integrator": "hht"}, "f", beams=True)
    assert s == {"dt": 1e-3, "substeps": 2, "check_energy": None, "integrator": "hht"}
    assert codegen.models.chain(2).simulation == {}


# ---------------------------------------------------------------- energy monitor

@pytest.mark.build
def test_energy_check_failure_exits_4_and_keeps_results(tmp_path, capsys):
    out = tmp_path / "m1.npz"
    rc = main(["simulate", M1, "--dt", "0.02", "--t-end", "2", "--check-energy", "1e-7", "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 4, err
    assert "energy check failed: max relative energy error" in err and "> tolerance 1e-07 (--check-energy)" in err
    chk = meta_of(out)["energy_check"]
    assert chk["passed"] is False and 1e-7 < chk["value"] < 1e-4


@pytest.mark.build
def test_forced_model_reports_the_work_of_its_dampers(tmp_path, capsys):
    """arm7's joint dampers take energy out: the summary prints the change and the work, the check is on the
    balance E - E0 - W; a force hook's (API) work is integrated by the compiled integrator too."""
    out = tmp_path / "a.npz"
    assert main(["simulate", "examples/arm7.yaml", "--t-end", "0.5", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "energy not conserved (applied forces): change " in text and "work of the applied forces" in text
    en = meta_of(out)["energy"]
    assert en["conservative"] is False and en["work"] < 0 and abs(en["change"] - en["work"]) < 1e-5 * abs(en["work"])
    s = get_system(codegen.load_model(M1))
    s.set_hook(lambda t, q, u: np.array([1.0, 0.0, 0.0, 0.0]))
    try:
        r = s.simulate(0.2, 1e-3, check_energy=1e-3)
    finally:
        s.set_hook(None)
    assert r.meta["energy"]["value"] < 1e-10 and r.meta["energy_check"]["passed"] is True
    assert abs(r.meta["energy"]["work"]) > 1e-3                             # the push does work
    from codegen.cli import _energy_text
    assert _energy_text(r.meta["energy"]).startswith("energy not conserved (applied forces")
