"""The user-facing compiled system: a model bound to one compiled kernel module.

``System(model, algorithm)`` is an instance of the runtime class of the model's kind (``codegen.runtime.families``,
one class per kind as Brian2 has one runtime per target): rigid trees (TreeSystem), trees closed by cut joints
(LoopSystem), closed loops by coordinate reduction (GrcrSystem) and flexible beams (BeamSystem).  This class
holds what they share: the build, the numbers, the simulation driver (its checks, the compiled integration, the
metadata, divergence and the energy balance) and the public signatures; the family classes fill in the steps
named by the ``_``-methods below.
"""
from __future__ import annotations

import contextlib
import math
from typing import Optional

import numpy as np

from ..algorithms import FAMILIES, family
from ..compiler import build_module
from .derivatives import Derivatives
from .integrate import ADAPTIVE, FIXED_STEPS, divergence, energy_balance, integrate_chunks, runaway, start_state, versions
from .options import Run
from .result import Result


def runtime_kind(model, algorithm=None) -> str:
    """The runtime class's kind of a model built with `algorithm` (errors about the pair are the build's)."""
    if hasattr(model, "beams"):
        return "beams"
    fam = FAMILIES.get(algorithm or "recursive")
    kind = fam.runtime if fam is not None else "tree"
    return "loops" if kind == "tree" and (getattr(model, "cuts", None) or getattr(model, "couplings", None)) else kind


def refused(name: str, why: str):
    """A method that refuses with ValueError(`name` `why`): what a family does not offer, named."""
    def refuse(self, *args, **kwargs):
        raise ValueError(f"{name} {why}")
    refuse.__name__ = name
    refuse.__doc__ = f"Not available here: {name} {why}."
    return refuse


class System(Derivatives):
    """A model bound to one compiled kernel module (topology + algorithm + options).

    Rigid trees: algorithms recursive (ref_point centroid | joint | origin), dense, mstmm, cfa; closed loops:
    recursive or dense with cut joints, or grcr.  Flexible beams: the rancf module, which holds the O(n) recursion
    ([HW eqs 44-55]) and the dense Cholesky solve of the same Omega and Gamma ([HW eq 41]) as a reference: algorithm
    'rancf' or 'dense' picks one (``set_algorithm``).  ``System(...)`` returns the class of the model's kind.

    Parameters
    ----------
    model : Model or codegen.model.beams.BeamModel
        The model.
    algorithm : str, optional
        The algorithm family (default recursive; see build).
    cache_dir : str or os.PathLike, optional
        The build cache folder.
    progress : bool, optional
        Show the progress of the build.
    derivatives : bool, optional
        Compile the derivative kernels too (otherwise built on first use).
    **options
        Options of the family (see build).

    Raises
    ------
    BuildError
        The algorithm cannot build this model, or the compilation failed.
    """

    kind = None                         # the runtime's name (Family.runtime; "loops": a tree with cut joints)
    KINDS: dict = {}                    # kind -> class, filled as the classes of codegen.runtime.families load
    beams = grcr = loops = False        # the model's kind, as the family classes set it
    na = 0                              # activation states: the state is x = (q, u, act), act_names name them
    act_names: list = []
    act = None                          # the activations of set_act (single-state calls), None: zeros
    integrator_note = ""                # appended to the refusal of an unknown integrator

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            System.KINDS[cls.kind] = cls

    def __new__(cls, model, algorithm: Optional[str] = None, *args, **kwargs):
        """Create the runtime class of the model's kind (System itself picks it)."""
        if cls is System:
            cls = System.KINDS[runtime_kind(model, algorithm)]
        return super().__new__(cls)

    def __init__(self, model, algorithm: Optional[str] = None, cache_dir=None, progress: bool = False,
                 derivatives: bool = False, **options):
        self.model = model
        self.algorithm, name = self._resolve_algorithm(algorithm)
        self.family = family(name, model)
        setup = self._setup_options(options)
        self.module, self.build_info = build_module(model, self.family.name, cache_dir=cache_dir,
                                                    progress=progress, derivatives=derivatives, **options)
        self._build_args = {"cache_dir": cache_dir, "progress": progress}
        self.options = dict(self.build_info["options"])
        self.plan = self.family.make_plan(model)
        self.kernel = getattr(self.module, self.family.kernel_class)()
        self._dkernel = self.kernel if derivatives else None     # the kernel with the derivatives (on first use)
        self.nq, self.nv = model.nq, model.nv
        self.coord_names, self.velocity_names = model.coord_names, model.velocity_names
        self.kernel.set_params(self._params())
        self._setup(**setup)

    # ---------------------------------------------------------------- steps the family classes define
    def _resolve_algorithm(self, algorithm):
        """(the algorithm's name as the user sees it, the registered family that builds it)."""
        algorithm = algorithm or "recursive"
        return algorithm, algorithm

    def _setup_options(self, options) -> dict:
        """Take the family's run-time options out of the build options, for _setup.

        (Family.run_options: they do not change the kernel) out of the
        build options, for _setup."""
        return {k: options.pop(k, None) for k in self.family.run_options}

    def _setup(self):
        """After the kernel is loaded with the model's numbers: names, kernel switches, checks."""

    def _describe(self) -> str:
        return f"{len(self.body_names)} bodies"

    def _params(self) -> np.ndarray:
        return self.plan.params()

    def _numbers_changed(self):
        """After update_model loaded new numbers."""

    def stable_step(self):
        """The estimated largest stable rk4 step [s], or None where there is no estimate (rigid models).

        Returns
        -------
        float or None
            The step [s], or None.
        """
        return None

    def _choose_integrator(self, run: Run):
        """(integrator, why) when the caller gave none."""
        return "rk4", "rk4 (default)"

    def _inputs(self, ctrl, limits):
        """A context in which the run's inputs (controls, limit switch) are set on the kernel."""
        if ctrl is not None:
            raise ValueError("ctrl: the model has no actuators")
        return contextlib.nullcontext()

    def _start_run(self, x, run: Run):
        """Check the values of the run's family options and prepare the kernel for a run from state x."""

    def _integrate(self, x, ts, run: Run, other=None):
        """(X, stats, wall, fail) of the compiled integration over the sample times ts."""
        run.work = np.zeros(len(ts)) if run.integrator in ("dopri5", *FIXED_STEPS) else None
        if run.threads > 1:
            self.kernel.step_threads = run.threads
        try:
            return integrate_chunks(self._run_kernel(run.integrator), x, ts, run.integrator, run.substeps, run.rtol, run.atol, run.h_max,
                                    f"simulate {self.model.name}", run.progress, other=other, work=run.work,
                                    outs=run.outputs)
        finally:
            if run.threads > 1:
                self.kernel.step_threads = 1

    def _run_kernel(self, integrator: str):
        """The kernel that runs `integrator` (tree families: implicit runs on the derivative kernel)."""
        return self.kernel

    def _finish_run(self, meta, run: Run, stats, fail):
        """Family entries of a run's meta; returns the run's Failure (or None).

        Family entries of a run's meta (stats: integrate_chunks'); returns the run's Failure or None (the
        failure in the family's words: Failure.explained)."""
        return fail

    def _result(self, X, ts, meta, run: Run) -> Result:
        raise NotImplementedError

    def applied_power(self, res, joint_forces_only: bool = False):
        """Power [W] of the non-conservative applied forces at the samples of a result.

        Power [W] of the non-conservative applied forces at the samples of a result, None when it is not known
        (a force hook); zeros where the model has none.

        Parameters
        ----------
        res : Result
            A result of this system.
        joint_forces_only : bool, optional
            Only the joint forces' part.

        Returns
        -------
        numpy.ndarray or None
            Power [W] at every sample, shape (nt,), or None when it is not known.
        """
        return np.zeros(len(res.t))

    def conservative(self) -> bool:
        """Whether the model has no non-conservative forces (dampers, joint forces, feedback).

        Returns
        -------
        bool
            True when the energy is conserved by the exact dynamics.
        """
        return True

    def unstable_rk4_hint(self, h, stable):
        """The hint of a run that diverged with rk4 at step h.

        Parameters
        ----------
        h : float
            The step [s] that diverged.
        stable : float or None
            The estimated stable rk4 step [s], if known.

        Returns
        -------
        str
            What to do instead.
        """
        return (f"the step h = {h:g} s is too large for this model (stiff forces or fast motion): use a smaller "
                "--dt or more --substeps, or --integrator dopri5")

    # ---------------------------------------------------------------- shared
    def __repr__(self):
        return (f"<System {self.model.name}: {self._describe()}, nq={self.nq}, nv={self.nv}, "
                f"{self.algorithm} {self.options} [{self.build_info['key']}]>")

    @property
    def integrators(self):
        """The integrators this system's module compiles (e.g. ``("rk4", "dopri5")``; beams add ``"hht"``).

        Returns
        -------
        tuple of str
            The integrator names simulate() accepts.
        """
        return self.family.integrators

    @property
    def lanes(self) -> int:
        """States per pass of forward_dynamics_batch and rollout.

        The vector width of the build machine (4 with AVX, else 2) where the module has lanes (the recursive
        family on a model the C export carries: templates/c/lanes.c.j2), else 1.

        Returns
        -------
        int
            The number of states one pass of the batches carries.
        """
        return int(getattr(self.module, "LANES", 1))

    def _kernels(self):
        """The loaded kernels (the system's own and, when it was built apart, the one with the derivatives)."""
        return list({id(k): k for k in (self.kernel, self._dkernel) if k is not None}.values())

    def update_model(self, model):
        """Load new numbers (masses, placements, spring constants) of a model with the same topology.

        Parameters
        ----------
        model : Model or codegen.model.beams.BeamModel
            A model with the topology (and, for rigid trees, the code pattern) of the system's.

        Raises
        ------
        ValueError
            The topology or the compiled pattern differs: build a new System.
        ModelError
            The new numbers are invalid.
        """
        if model.topology_key() != self.model.topology_key():
            raise ValueError("topology differs: build a new System for this model")
        plan = self.family.make_plan(model)
        if hasattr(plan, "code_pattern") and plan.code_pattern() != self.plan.code_pattern():
            raise ValueError("the compiled kernel is specialised to the old placements (which offsets are zero, "
                             "which joint frames are unrotated) and the new numbers differ there: build a new System")
        self.model, self.plan = model, plan
        p = self._params()
        for k in self._kernels():
            k.set_params(p)
        self._numbers_changed()

    def _qu(self, q, u):
        q = np.ascontiguousarray(q, dtype=float).reshape(-1)
        u = np.ascontiguousarray(u, dtype=float).reshape(-1)
        if q.size != self.nq or u.size != self.nv:
            raise ValueError(f"expected q of length {self.nq} and u of length {self.nv}")
        return q, u

    def initial_state(self):
        """The model's initial state ``(q0, u0)``: arrays of shape (nq,) and (nv,).

        Returns
        -------
        q0 : numpy.ndarray, shape (nq,)
            Initial coordinates [rad, m].
        u0 : numpy.ndarray, shape (nv,)
            Initial velocities [rad/s, m/s].
        """
        return self.model.initial_state()

    # ---------------------------------------------------------------- simulation
    def simulate(self, t_end: float, dt: Optional[float] = None, integrator: Optional[str] = None, q0=None, u0=None,
                 rtol: float = 1e-8, atol: float = 1e-10, h_max: Optional[float] = None, substeps: int = 1,
                 progress: bool = False, alpha: Optional[float] = None, newton_tol: Optional[float] = None,
                 max_newton: Optional[int] = None, check_energy: Optional[float] = None, keep_partial: bool = False,
                 joint_wrench: Optional[bool] = None, baumgarte: Optional[float] = None,
                 projection: Optional[bool] = None, switching: Optional[str] = None, ctrl=None, limits: bool = True,
                 threads: int = 1, frames=None) -> Result:
        """Integrate from the model's initial state (or q0, u0) to t_end, sampling every dt.

        rk4 takes fixed steps of dt / substeps; dopri5 chooses its own steps (rtol, atol, h_max) and writes the
        samples by dense output; hht (beam models): implicit HHT-alpha (alpha in [-1/3, 0]), modified Newton
        iterations with the analytical elastic Jacobian, the iteration matrix Omega + beta h^2 (1+alpha) K
        factored once per step (newton_tol: relative increment; max_newton iterations, warned if not met).
        euler, implicitfast, implicit (rigid trees): MuJoCo's single steps of dt / substeps, velocity-implicit in
        the joint dampers, in every force element's velocity partials, and also in the bias forces' (implicit:
        on the derivative kernel, built on first use); docs/guide/integrators.md.
        Default: the model file's (``simulation:``; an MJCF file's ``<option timestep integrator>``: dt = the
        timestep), else rk4, except for beam models where dt / substeps is above the estimated
        stable rk4 step (``stable_step``), else hht (meta["integrator_choice"] says why).

        A run that stops being finite, or whose energy runs away (an unstable step pumps energy in), raises
        SimulationDiverged naming the time, the first bad coordinate and the last good state, or with
        keep_partial=True returns the Result up to there (meta["partial"], ["diverged_at"]).
        joint_wrench=True adds result.extra["joint_wrench"] (nt x n_joints x 6, see joint_wrenches); frames=[names]
        (rigid trees, s.frames) adds the frames' trajectories: frame_names, frame_position (nt x k x 3),
        frame_rotation (nt x k x 3 x 3) and frame_velocity (nt x k x 6, "local_world_aligned"; frame_trajectories).

        Closed loops (cut joints): the start state must close (ModelError otherwise); Baumgarte's stabilisation
        Phi'' + 2 b Phi' + b^2 Phi = 0 holds the drift down, b = ``baumgarte`` [1/s] (default 1 / (10 h), h the
        step; 0: off); projection=True projects the state back onto the constraint manifold after every step
        instead (Newton steps on Phi(q) = 0 to 1e-12, then the velocities onto Phi' = 0; Baumgarte then off unless
        given); result.extra gets cut_joint_wrench (nt x n_cuts x 6: the force side i exerts on side j
        through the cut, about the cut point, in side j's cut frame, like joint_wrench), cut_joint_names,
        multipliers (nt x m), constraint_violation (nt x n_cuts x 2: the largest |Phi| and |Phi'| of each cut's
        rows) and cut_q / cut_q_names (the cut joints' own coordinates); meta["constraint_violation_max"].

        grcr (``algorithm="grcr"``): the dependents are solved after every step (coordinate partitioning); when a
        loop's partition degrades, switching="acs" (default) re-selects its dependents (Sect. 4) and
        switching="gcl" restructures the loop so that three adjacent dependents close an open loop (Sect. 5,
        planar loops that share no joints; rk4), each from the last good state; result.extra
        partition_switch_t/_loop/_old/_new log the switches.

        Actuators: ctrl is None (each actuator's ctrl function of the model file, in compiled code), one value
        per actuator, a table (t, values) (values: len(t) x nu, interpolated linearly in compiled code) or a
        callable ctrl(t, q, u) -> nu values (called with the GIL at every evaluation); result.extra gets
        actuator_names, ctrl (the controls after ctrlrange) and actuator_force (after forcerange, before the gear),
        nt x nu each.

        Joint limits (the model's ``limits:``, MJCF ranges, URDF <limit>): enforced unless limits=False, as a
        compliant one-sided spring-damper (templates/shared/limits.pyx.j2); result.extra gets limit_names and
        limit_force (nt x limited coordinates, 0 where inactive), meta["limits"] = {"enforced", "active_samples"}.

        threads=2 (algorithm mstmm, rk4; models without point-to-point forces or actuator activations): each RK4
        stage's kinematics and the bodies' own terms run on a second thread, a few bodies behind the sweep's
        backward recursion (templates/mstmm/pipeline.pyx.j2); the same arithmetic, so the states are bitwise those
        of threads=1 where gcc contracts no multiply-adds (MBGEN_OPT=g), else equal to round-off.

        Energy: meta["energy"] = energy_balance() (relative error of E - E0 - W, W the work of dampers, joint
        forces and actuators); with check_energy = tol also meta["energy_check"] = {"tol", "value", "passed"}.

        The options of one kind of model (alpha, newton_tol, max_newton: beams; baumgarte: closed loops and
        couplings; projection: closed loops of the tree families; switching: grcr; joint_wrench: rigid trees;
        codegen.runtime.options.KIND_OPTIONS) given to a model of another kind are refused by name before anything
        runs; None (their default) takes the kind's default.

        Parameters
        ----------
        t_end : float
            End time [s].
        dt : float, optional
            Sampling interval [s] (fixed-step integrators: the step is dt / substeps); default the model file's
            (an MJCF file's timestep).
        integrator : str, optional
            ``rk4``, ``dopri5``, ``euler``, ``implicitfast``, ``implicit`` (rigid trees) or ``hht`` (beam
            models); default as above.
        q0 : array_like, shape (nq,), optional
            Initial coordinates [rad, m] (default: the model's).
        u0 : array_like, shape (nv,), optional
            Initial velocities [rad/s, m/s] (default: the model's).
        rtol, atol : float, optional
            dopri5's relative and absolute tolerances.
        h_max : float, optional
            dopri5's largest step [s].
        substeps : int, optional
            rk4 and hht steps per sample.
        progress : bool, optional
            Show a progress bar.
        alpha : float, optional
            Beam models: HHT-alpha's numerical damping, in [-1/3, 0] (default -0.05).
        newton_tol : float, optional
            Beam models: HHT's Newton tolerance (relative increment; default 1e-6).
        max_newton : int, optional
            Beam models: HHT's Newton iterations per step (default 20).
        check_energy : float, optional
            Tolerance of the relative energy balance, recorded in meta["energy_check"].
        keep_partial : bool, optional
            Return the samples up to a divergence instead of raising.
        joint_wrench : bool, optional
            Rigid trees: record the joint wrenches [N, N m] at every sample.
        baumgarte : float, optional
            Closed loops: Baumgarte's b [1/s].
        projection : bool, optional
            Closed loops: project onto the constraint manifold after every step.
        switching : str, optional
            grcr: ``acs`` or ``gcl``.
        ctrl : None, array_like or callable, optional
            The actuators' controls (see above).
        limits : bool, optional
            Enforce the joint limits.
        threads : int, optional
            rk4 on two threads (algorithm mstmm, see above); default 1.
        frames : list of str or int, optional
            Rigid trees: record these frames' placements and velocities at every sample.

        Returns
        -------
        Result
            The samples t (nt,), q (nt, nq), u (nt, nv), body poses, energies [J] and the extras named above.

        Raises
        ------
        ValueError
            A bad option (integrator, alpha, substeps, tolerances, check_energy, ctrl), or an option of another
            kind of model.
        SimulationDiverged
            The run stopped being finite or its energy ran away (unless keep_partial).
        ModelError
            Closed loops: the start state does not close.
        """
        file = getattr(self.model, "simulation", None) or {}
        if dt is None:
            if "dt" not in file:
                raise ValueError("dt: required (the model file sets no simulation dt)")
            dt = file["dt"]
        origin = None
        if integrator is None and "integrator" in file:
            integrator, origin = file["integrator"], f"{file['integrator']} (the model file's)"
        run = Run(t_end, dt, integrator=integrator, origin=origin, q0=q0, u0=u0, rtol=rtol, atol=atol, h_max=h_max, substeps=substeps,
                  progress=progress, threads=threads, alpha=alpha, newton_tol=newton_tol, max_newton=max_newton,
                  baumgarte=baumgarte, projection=projection, switching=switching,
                  joint_wrench=joint_wrench, frames=frames).for_kind(self.kind, self.algorithm)
        with self._inputs(ctrl, limits):
            return self._simulate(run, check_energy, keep_partial)

    def _check_run(self, run: Run, check_energy):
        run.stable = self.stable_step()
        choice = run.origin
        if run.integrator is None:
            run.integrator, choice = self._choose_integrator(run)
        if run.integrator not in self.integrators:
            raise ValueError(f"integrator '{run.integrator}' not one of {', '.join(self.integrators)}"
                             + self.integrator_note)
        if run.integrator == "hht" and not (-1.0 / 3.0 <= run.alpha <= 0.0):
            raise ValueError("HHT alpha must lie in [-1/3, 0]")
        if not (isinstance(run.substeps, (int, np.integer)) and run.substeps >= 1):
            raise ValueError(f"substeps must be a positive integer, got {run.substeps!r}")
        if run.integrator in ADAPTIVE and not (1e-14 <= run.rtol < math.inf and 0 < run.atol < math.inf):
            raise ValueError(f"{run.integrator} needs 1e-14 <= rtol (double precision cannot meet a tighter one) and atol > 0, "
                             f"got rtol = {run.rtol:g}, atol = {run.atol:g}")
        if check_energy is not None and not (check_energy > 0 and math.isfinite(check_energy)):
            raise ValueError(f"check_energy must be a positive tolerance, got {check_energy!r}")
        if not (isinstance(run.threads, (int, np.integer)) and run.threads >= 1):
            raise ValueError(f"threads must be a positive integer, got {run.threads!r}")
        most = getattr(self.kernel, "STEP_THREADS", 1)
        if run.threads > 1 and (run.integrator != "rk4" or run.threads > most):
            raise ValueError(f"threads = {run.threads}: only rk4 of algorithm mstmm runs on two threads, in models "
                             f"without point-to-point forces or actuator activations (this run: algorithm "
                             f"{self.algorithm}, integrator {run.integrator}, at most {most if run.integrator == 'rk4' else 1})")
        return choice

    def _simulate(self, run: Run, check_energy, keep_partial) -> Result:
        choice = self._check_run(run, check_energy)
        x, ts = start_state(self, run.t_end, run.dt, run.q0, run.u0)
        self._start_run(x, run)
        X, stats, wall, fail = self._integrate(x, ts, run)
        meta = {"model": self.model.source, "model_name": self.model.name, "algorithm": self.algorithm,
                "options": self.options, "integrator": run.integrator, "dt": run.dt, "t_end": run.t_end,
                "substeps": run.substeps, "threads": run.threads,
                "rtol": run.rtol if run.integrator in ADAPTIVE else None,
                "atol": run.atol if run.integrator in ADAPTIVE else None,
                "wall_time_s": wall, "rhs_evaluations": int(stats[0]), "steps": int(stats[1]),
                "rejected_steps": int(stats[2]) if run.integrator in ADAPTIVE else 0,
                "build_key": self.build_info["key"], "versions": versions()}
        if choice:
            meta["integrator_choice"] = choice
        if run.stable is not None:
            meta["rk4_stable_step"] = run.stable if math.isfinite(run.stable) else None
        fail = self._finish_run(meta, run, stats, fail)
        n = fail.sample if fail else len(ts)
        res = self._with_work(self._result(X[:n], ts[:n], meta, run), run, n)
        fail = runaway(self, res, X[:n]) or fail   # finite states whose energy ran away: an earlier failure
        if fail:
            err = divergence(self, fail, X, ts, run.integrator, run.h, run.stable)
            if not keep_partial:
                raise err
            n = fail.sample
            meta.update(partial=True, diverged_at=err.t, diverged=str(err))
            res = self._with_work(self._result(X[:n], ts[:n], meta, run), run, n)   # (X[:n]: the joint wrenches too)
            err.partial = res
            res.divergence = err
            return res
        en = energy_balance(self, res)
        meta["energy"] = en
        if check_energy is not None:
            meta["energy_check"] = {"tol": check_energy, "value": en["value"],
                                    "passed": None if en["value"] is None else bool(en["value"] <= check_energy)}
        return res


    @staticmethod
    def _with_work(res, run: Run, n: int):
        """Record the work of the non-conservative forces in result.extra["work"].

        result.extra["work"]: the work [J] of the non-conservative forces from t = 0 at every sample (dampers,
        joint forces, actuators, limits, friction, the tendons' dampers and limits, feedback, the force hook),
        integrated inside the compiled integrator with its own steps, so the energy balance measures the
        integrator, not the sampling."""
        if run.work is not None:
            res.extra["work"] = run.work[:n].copy()
        return res


def build(model, algorithm: Optional[str] = None, ref_point: Optional[str] = None, cache_dir=None,
          progress: bool = False, **options) -> System:
    """Generate, compile (or reuse from the cache) and load the kernels for a model.

    Parameters
    ----------
    model : Model or codegen.model.beams.BeamModel
        The model.
    algorithm : str, optional
        The algorithm family (``codegen.ALGORITHMS``): recursive (default), dense, mstmm, cfa, grcr; rancf or
        dense for beam models.
    ref_point : str, optional
        Recursive family: the analysis reference point, ``centroid``, ``joint`` or ``origin``.
    cache_dir : str or os.PathLike, optional
        The build cache folder (default: the user's cache folder, or MBGEN_CACHE_DIR).
    progress : bool, optional
        Show the progress of code generation and compilation.
    **options
        Further options of the family (Family.options and run_options), e.g. ``derivatives=True``.

    Returns
    -------
    System
        The instance of the runtime class of the model's kind (TreeSystem, LoopSystem, GrcrSystem, BeamSystem).

    Raises
    ------
    BuildError
        The algorithm cannot build this model, an option is unknown, or the compilation failed.
    ValueError
        An option has a bad value.
    """
    if ref_point is not None:
        options["ref_point"] = ref_point
    return System(model, algorithm, cache_dir=cache_dir, progress=progress, **options)
