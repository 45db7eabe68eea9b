"""The optional ``simulation:`` section of a model file: how the model is meant to be run.

    simulation: {integrator: hht, dt: 1e-3, t_end: 4, substeps: 1, rtol: 1e-8, atol: 1e-10, hht_alpha: -0.05,
                 check_energy: 1e-3}

Every key is optional; the command line overrides each one (CLI option > model file > built-in default).
``check_energy: null`` (or false) turns the energy check off.  The validated section is stored on the model
as ``model.simulation`` (a plain dict holding only the keys given).
"""
from __future__ import annotations

from .core import ModelError, _num, _short

INTEGRATORS = ("rk4", "dopri5", "euler", "implicitfast", "implicit", "rosenbrock", "hht")
RIGID_ONLY = ("euler", "implicitfast", "implicit", "rosenbrock")     # MuJoCo's single steps, the stiff method
MAX_SUBSTEPS = 1_000_000      # steps per sample: the command line's limit and the model file's
SIMULATION_KEYS = ("integrator", "dt", "t_end", "substeps", "rtol", "atol", "hht_alpha", "check_energy")


def parse_simulation(d, source: str, beams: bool) -> dict:
    """Validate a ``simulation:`` mapping.

    (None or absent: {}); ModelError names the file and the field
    (``simulation.dt``).  beams: the model is a flexible-beam model (only those take integrator hht)."""
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise ModelError(f"expected a mapping with some of {', '.join(SIMULATION_KEYS)}, got {_short(d)}",
                         source, "simulation")
    unknown = [k for k in d if k not in SIMULATION_KEYS]
    if unknown:
        shown = sorted(k if isinstance(k, str) else _short(k) for k in unknown)
        raise ModelError(f"unknown keys {_short(shown)} (allowed: {', '.join(SIMULATION_KEYS)})", source,
                         "simulation")
    out = {}
    for k, v in d.items():
        f = f"simulation.{k}"
        if k == "integrator":
            if not isinstance(v, str) or v not in INTEGRATORS:
                raise ModelError(f"expected one of {', '.join(INTEGRATORS)}, got {_short(v)}", source, f)
            if v == "hht" and not beams:
                raise ModelError("hht is for flexible-beam models only (this is a rigid-body model)", source, f)
            if v in RIGID_ONLY and beams:
                raise ModelError(f"{v} is for rigid-body models (this is a flexible-beam model: rk4, dopri5, hht)",
                                 source, f)
            out[k] = v
        elif k == "substeps":
            out[k] = _num(v, source, f, positive=True, integer=True)
            if out[k] > MAX_SUBSTEPS:
                raise ModelError(f"must lie in [1, {MAX_SUBSTEPS:,}], got {out[k]:.3g}", source, f)
        elif k == "hht_alpha":
            a = _num(v, source, f)
            if not -1.0 / 3.0 <= a <= 0.0:
                raise ModelError(f"HHT alpha must lie in [-1/3, 0], got {a:g}", source, f)
            out[k] = a
        elif k == "check_energy":
            if v is None or v is False:
                out[k] = None
            else:
                out[k] = _num(v, source, f, positive=True)
        elif k == "rtol":
            r = _num(v, source, f, positive=True)
            if not 1e-14 <= r < 1:
                raise ModelError(f"must lie in [1e-14, 1) (1e-14: double precision), got {r:g}", source, f)
            out[k] = r
        else:                                   # dt, t_end, atol
            out[k] = _num(v, source, f, positive=True)
    if "dt" in out and "t_end" in out and out["dt"] > out["t_end"]:
        raise ModelError(f"dt = {out['dt']:g} is longer than t_end = {out['t_end']:g}", source, "simulation.dt")
    if "t_end" in out and "dt" in out and out["t_end"] / out["dt"] > 1e8:
        raise ModelError(f"t_end / dt = {out['t_end'] / out['dt']:.3g} samples (at most 1e8)", source,
                         "simulation.t_end")
    return out
