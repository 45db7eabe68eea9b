"""The options of one simulate() call: one object, checked in one place before anything runs.

``Run`` holds every option System.simulate takes (each documented once, in its docstring) and the state a run
keeps (the stable step, the work, the in-loop outputs). ``KIND_OPTIONS`` names the options that only some kinds of
model take (System.kind: tree, loops, grcr, beams): one given to a model of another kind is refused by name, never
ignored, and the ones a kind takes get their defaults there."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

# option -> (the kinds of model that take it, what it is for, its default for them)
KIND_OPTIONS = {
    "alpha": (("beams",), "HHT-alpha's numerical damping of flexible-beam models (integrator hht)", -0.05),
    "newton_tol": (("beams",), "HHT's Newton tolerance, flexible-beam models", 1e-6),
    "max_newton": (("beams",), "HHT's Newton iterations per step, flexible-beam models", 20),
    "baumgarte": (("loops", "grcr"), "Baumgarte's rate of closed loops (cut joints) and couplings", None),
    "projection": (("loops",), "the projection onto the constraints of closed loops of algorithm recursive (grcr "
                               "solves its dependent coordinates after every step instead)", False),
    "switching": (("grcr",), "the partition switching of algorithm grcr ('acs' or 'gcl')", None),
    "joint_wrench": (("tree", "loops"), "the joint reaction wrenches of rigid-body trees", False),
    "frames": (("tree", "loops"), "the trajectories of frames of rigid-body trees (s.frames)", None),
}

KIND_NAMES = {"tree": "a rigid-body tree", "loops": "a tree closed by cut joints or couplings",
              "grcr": "closed loops of algorithm grcr", "beams": "a flexible-beam model"}


@dataclass
class Run:
    """The options of one simulate() call (see System.simulate) and the state of the run."""

    t_end: float
    dt: float
    integrator: Optional[str] = None
    origin: Optional[str] = None        # where the integrator came from when the call named none (meta)
    q0: object = None
    u0: object = None
    rtol: float = 1e-8
    atol: float = 1e-10
    h_max: Optional[float] = None
    substeps: int = 1
    progress: bool = False
    threads: int = 1                    # rk4 on this many threads (kernel.STEP_THREADS: the mstmm family's two)
    alpha: Optional[float] = None       # the options of KIND_OPTIONS: None where not given
    newton_tol: Optional[float] = None
    max_newton: Optional[int] = None
    baumgarte: Optional[float] = None
    projection: Optional[bool] = None
    switching: Optional[str] = None
    joint_wrench: Optional[bool] = None
    frames: Optional[object] = None     # frame names or indices (simulate(frames=...))
    stable: Optional[float] = None      # the estimated stable rk4 step (beam models), else None
    nfact: int = 0                      # HHT: factorizations of the iteration matrix
    work: Optional[np.ndarray] = None   # the work of the non-conservative forces at the samples (compiled rk4, dopri5)
    outputs: Optional[np.ndarray] = None   # outputs at the samples from the compiled rk4 (kernel.IN_LOOP_OUTPUTS)

    @property
    def h(self):
        """The integrator's step dt / substeps [s]."""
        return self.dt / self.substeps

    def for_kind(self, kind: str, algorithm: str) -> "Run":
        """Refuse the options a model of this kind does not take; give those it takes their defaults.

        An option counts as given when it is neither None nor False (``projection=False`` asks for nothing).

        Raises
        ------
        ValueError
            An option of KIND_OPTIONS given to a model of another kind, naming it and what it is for.
        """
        for name, (kinds, what, default) in KIND_OPTIONS.items():
            value = getattr(self, name)
            if kind in kinds:
                if value is None:
                    setattr(self, name, default)
            elif value is not None and value is not False:
                takes = [n for n, (ks, _, _) in KIND_OPTIONS.items() if kind in ks]
                raise ValueError(f"{name}: not an option of this model ({KIND_NAMES.get(kind, kind)}, algorithm "
                                 f"{algorithm}); it is {what}"
                                 + (f" (this model's own: {', '.join(takes)})" if takes else ""))
        return self
