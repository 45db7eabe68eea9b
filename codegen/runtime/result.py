"""Simulation results: arrays with names and metadata; NPZ, CSV and PNG outputs."""
from __future__ import annotations

import json
import os
import tempfile

import numpy as np


class LazyExtras(dict):
    """The extras of a Result: a dict whose entries may be produced on first use.

    ``defer(keys, producer)`` registers a producer (no arguments -> a dict of those keys) that runs the first time
    any of its keys is read, listed or saved; ``in`` and ``len`` know the keys without running it. What every
    run computes stays cheap this way (the joint geometry of an animation: 30 ms of numpy at 100 bodies and
    1,000 samples, next to 70 ms of compiled simulation)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pending = {}

    def defer(self, keys, producer):
        """Produce the entries `keys` by ``producer()`` on first use.

        Parameters
        ----------
        keys : iterable of str
            The keys the producer gives.
        producer : callable
            No arguments; returns a dict holding at least those keys.
        """
        for k in keys:
            self._pending[k] = producer

    def _run(self, producer):
        keys = [k for k, p in self._pending.items() if p is producer]      # (a key set since is not overwritten)
        for k in keys:
            del self._pending[k]
        out = producer()
        super().update({k: out[k] for k in keys})

    def update(self, *args, **kwargs):
        """Set entries as dict.update does; a deferred entry set here is not produced later."""
        d = dict(*args, **kwargs)
        for k in d:
            self._pending.pop(k, None)
        super().update(d)

    def _resolve(self):
        while self._pending:
            self._run(next(iter(self._pending.values())))

    def __missing__(self, key):
        if key not in self._pending:
            raise KeyError(key)
        self._run(self._pending[key])
        return dict.__getitem__(self, key)

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self._pending

    def __len__(self):
        return dict.__len__(self) + len([k for k in self._pending if not dict.__contains__(self, k)])

    def __setitem__(self, key, value):
        self._pending.pop(key, None)
        super().__setitem__(key, value)

    def get(self, key, default=None):
        """The entry (produced if deferred), or default."""
        return self[key] if key in self else default

    def __iter__(self):
        self._resolve()
        return super().__iter__()

    def keys(self):
        """Every key (deferred entries produced first)."""
        self._resolve()
        return super().keys()

    def items(self):
        """Every (key, value) (deferred entries produced first)."""
        self._resolve()
        return super().items()

    def values(self):
        """Every value (deferred entries produced first)."""
        self._resolve()
        return super().values()

    def copy(self):
        """A plain dict of every entry (deferred entries produced first)."""
        self._resolve()
        return dict(self)

    def __repr__(self):
        self._resolve()
        return super().__repr__()

    def __reduce__(self):
        self._resolve()                  # pickled (a Result sent to another process) with every entry produced
        return LazyExtras, (dict(self),)


class Result:
    """Sampled trajectory with body poses and energies; save() writes NPZ, save_csv() CSV, plot() PNG.

    Beam models add extra arrays (saved in the same NPZ): node_names, node_pos (nt x n_nodes x 2),
    energy_elastic, energy_gravity, snapshot_index, snapshot_curve; energy_potential = elastic + gravity.

    Parameters
    ----------
    t : numpy.ndarray, shape (nt,)
        Sample times [s].
    q : numpy.ndarray, shape (nt, nq)
        Coordinates [rad, m].
    u : numpy.ndarray, shape (nt, nv)
        Velocities [rad/s, m/s].
    coord_names, velocity_names : list of str
        Names of the columns of q and u.
    body_names : list of str
        Body names.
    body_com : numpy.ndarray, shape (nt, nb, 3)
        Centroids [m].
    body_quat : numpy.ndarray, shape (nt, nb, 4)
        Orientations (w, x, y, z).
    energy_kinetic, energy_potential : numpy.ndarray, shape (nt,)
        Energies [J].
    meta : dict
        The run's metadata (model, algorithm, integrator, dt, wall time, energy balance, versions, ...).
    extra : dict
        Further arrays by name (joint geometry, joint wrenches, actuator and loop outputs, beam arrays).
    """

    def __init__(self, t, q, u, coord_names, velocity_names, body_names, body_com, body_quat, energy_kinetic,
                 energy_potential, meta, extra=None):
        self.t, self.q, self.u = t, q, u
        self.coord_names, self.velocity_names, self.body_names = coord_names, velocity_names, body_names
        self.body_com, self.body_quat = body_com, body_quat
        self.energy_kinetic, self.energy_potential = energy_kinetic, energy_potential
        self.meta = meta
        self.extra = extra if isinstance(extra, LazyExtras) else LazyExtras(extra or {})

    @property
    def energy_total(self):
        """Kinetic plus potential energy at every sample, shape (nt,), in J.

        Returns
        -------
        numpy.ndarray, shape (nt,)
            E = T + V [J].
        """
        return self.energy_kinetic + self.energy_potential

    def coord(self, name: str) -> np.ndarray:
        """One coordinate over time, shape (nt,), by its name (``JOINT.DOF``, e.g. ``"hinge3.angle"``).

        Parameters
        ----------
        name : str
            A coordinate name of coord_names.

        Returns
        -------
        numpy.ndarray, shape (nt,)
            Its values [rad or m].

        Raises
        ------
        ValueError
            No coordinate has that name.
        """
        return self.q[:, self.coord_names.index(name)]

    def arrays(self) -> dict:
        """Every array of the NPZ by its key (the metadata as a JSON string under ``meta``).

        Returns
        -------
        dict of str to numpy.ndarray
            The arrays save() writes.
        """
        d = {"t": self.t, "q": self.q, "u": self.u, "coord_names": np.array(self.coord_names),
             "velocity_names": np.array(self.velocity_names), "body_names": np.array(self.body_names),
             "body_com": self.body_com, "body_quat": self.body_quat, "energy_kinetic": self.energy_kinetic,
             "energy_potential": self.energy_potential, "meta": np.array(json.dumps(self.meta))}
        d.update(self.extra.items())
        return d

    def save(self, path) -> str:
        """Write the NPZ atomically (temporary file in the same folder, then rename).

        Parameters
        ----------
        path : str or os.PathLike
            The file (``.npz`` is appended when missing).

        Returns
        -------
        str
            The path written.
        """
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
        atomic_write(path, lambda fh: np.savez_compressed(fh, **self.arrays()))
        return path

    def save_csv(self, path) -> str:
        """t, q, u, energies as columns with a header row (RFC 4180: a name with a comma or a quote is quoted).

        Parameters
        ----------
        path : str or os.PathLike
            The CSV file.

        Returns
        -------
        str
            The path written.
        """
        import csv
        import io
        path = os.fspath(path)
        cols = ["t"] + [f"q:{n}" for n in self.coord_names] + [f"u:{n}" for n in self.velocity_names] + \
            ["energy_kinetic", "energy_potential"]
        data = np.column_stack([self.t, self.q, self.u, self.energy_kinetic, self.energy_potential])
        head = io.StringIO()
        csv.writer(head, lineterminator="\n").writerow(cols)

        def write(fh):
            fh.write(head.getvalue().encode("utf-8"))
            np.savetxt(fh, data, delimiter=",")
        atomic_write(path, write)
        return path

    @property
    def node_names(self):
        """Beam models: the names of the beam nodes (``BEAM.nK``, the last node of the last beam ``tip``).

        Returns
        -------
        list of str
            n_nodes names.

        Raises
        ------
        KeyError
            Not a beam model's result.
        """
        return [str(s) for s in self.extra["node_names"]]

    @property
    def node_pos(self):
        """Beam models: node positions, shape (nt, n_nodes, 2), in m.

        Returns
        -------
        numpy.ndarray, shape (nt, n_nodes, 2)
            Positions [m].

        Raises
        ------
        KeyError
            Not a beam model's result.
        """
        return self.extra["node_pos"]

    def node(self, name: str) -> np.ndarray:
        """Beam models: one node's position over time, shape (nt, 2), in m.

        Parameters
        ----------
        name : str
            A node name of node_names.

        Returns
        -------
        numpy.ndarray, shape (nt, 2)
            Its position [m].

        Raises
        ------
        ValueError
            No node has that name.
        """
        return self.node_pos[:, self.node_names.index(name)]

    def plot(self, path) -> str:
        """Plot the result into a PNG file.

        PNG: coordinates against time (top) and energies (bottom); beam models: node paths with
        configuration snapshots (left), tip coordinates and energies (right).

        Parameters
        ----------
        path : str or os.PathLike
            The PNG file.

        Returns
        -------
        str
            The path written.
        """
        if "node_pos" in self.extra:
            return self._plot_beams(path)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
        nshow = min(len(self.coord_names), 12)
        for k in range(nshow):
            a1.plot(self.t, self.q[:, k], label=plain(self.coord_names[k]))
        a1.set_ylabel("coordinates")
        a1.legend(fontsize=7, ncol=3, loc="best")
        if nshow < len(self.coord_names):
            a1.set_title(f"first {nshow} of {len(self.coord_names)} coordinates", fontsize=9)
        e0 = self.energy_total[0]
        a2.plot(self.t, self.energy_kinetic, label="kinetic")
        a2.plot(self.t, self.energy_potential, label="potential")
        a2.plot(self.t, self.energy_total, "k--", label="total")
        a2.set_xlabel("t [s]")
        a2.set_ylabel("energy [J]")
        drift = np.max(np.abs(self.energy_total - e0)) / max(abs(e0), np.max(np.abs(self.energy_kinetic)), 1e-300)
        a2.set_title(f"max relative drift of the total: {drift:.2e}", fontsize=9)
        a2.legend(fontsize=8)
        fig.suptitle(plain(f"{self.meta.get('model_name', '')}: {self.meta.get('algorithm')} "
                           f"{self.meta.get('options', '')}, {self.meta.get('integrator')}"))
        fig.tight_layout()
        path = os.fspath(path)
        atomic_write(path, lambda fh: fig.savefig(fh, dpi=110, format="png"))
        plt.close(fig)
        return path

    def _plot_beams(self, path) -> str:
        """PNG: node paths with configuration snapshots (left), tip coordinates and energies (right)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        P = self.node_pos
        fig = plt.figure(figsize=(12, 7))
        a0 = fig.add_subplot(1, 2, 1)
        if "snapshot_curve" in self.extra:          # 11 points per element
            npe = 11
            for k, c in zip(self.extra["snapshot_index"], self.extra["snapshot_curve"]):
                col = plt.cm.viridis(k / max(len(self.t) - 1, 1))
                for el in c.reshape(-1, npe, 2):
                    a0.plot(el[:, 0], el[:, 1], "-", color=col, lw=1)
                a0.plot(P[k, :, 0], P[k, :, 1], ".", color=col, ms=3)
        else:
            for k in np.linspace(0, len(self.t) - 1, 9).astype(int):
                a0.plot(P[k, :, 0], P[k, :, 1], "-", color=plt.cm.viridis(k / max(len(self.t) - 1, 1)), lw=1)
        tip = self.node("tip") if "tip" in self.node_names else P[:, -1]
        a0.plot(tip[:, 0], tip[:, 1], "k--", lw=0.8, label="tip path")
        a0.set_aspect("equal")
        a0.set_xlabel("x [m]")
        a0.set_ylabel("y [m]")
        a0.legend(fontsize=8)
        a0.set_title("beams at 9 instants (11 points per element; dots: nodes)", fontsize=9)
        a1 = fig.add_subplot(2, 2, 2)
        a1.plot(self.t, tip[:, 0], label="tip x")
        a1.plot(self.t, tip[:, 1], label="tip y")
        a1.set_ylabel("m")
        a1.legend(fontsize=8)
        a2 = fig.add_subplot(2, 2, 4, sharex=a1)
        Ue = self.extra["energy_elastic"]
        Vg = self.extra["energy_gravity"]
        tot = self.energy_total
        a2.plot(self.t, self.energy_kinetic, label="kinetic")
        a2.plot(self.t, Ue, label="elastic")
        a2.plot(self.t, Vg, label="gravity")
        a2.plot(self.t, tot, "k--", label="total")
        scale = max(np.abs(self.energy_kinetic).max(), np.abs(Vg).max(), 1e-300)
        a2.set_title(f"max |E - E0| / max(T, |V|) = {np.abs(tot - tot[0]).max() / scale:.2e}", fontsize=9)
        a2.set_xlabel("t [s]")
        a2.set_ylabel("J")
        a2.legend(fontsize=8)
        fig.suptitle(plain(f"{self.meta.get('model_name', '')}: {self.meta.get('algorithm')}, "
                           f"{self.meta.get('integrator')}"))
        fig.tight_layout()
        path = os.fspath(path)
        atomic_write(path, lambda fh: fig.savefig(fh, dpi=110, format="png"))
        plt.close(fig)
        return path


RESULT_LIMIT_MB = 2000      # arrays of a results file, uncompressed (the CLI's default --max-output-mb)
T_LIMIT = 1e100             # |t| of a results file [s]: the range of a model file's numbers


def load_result(path, limit_mb: float = RESULT_LIMIT_MB) -> Result:
    """Load a Result from an NPZ written by Result.save(), checked.

    A Result from an NPZ written by save(), checked as a model file is (ValueError naming the file and the array):
    a regular file whose arrays, uncompressed, stay within limit_mb (an NPZ of 3 MB may inflate to GiB); every
    documented array present with its shape, a numeric dtype and finite values; t strictly increasing; meta a JSON
    object; the joint geometry for animations within its index ranges.

    Parameters
    ----------
    path : str or os.PathLike
        The NPZ file.
    limit_mb : float, optional
        The largest uncompressed size [MB] accepted.

    Returns
    -------
    Result
        The result.

    Raises
    ------
    ValueError
        The file is not a valid results file (the message names the file and the array).
    """
    import zipfile
    from ..model.robotfiles import open_regular
    path = os.fspath(path)
    try:
        with open_regular(path) as fh, zipfile.ZipFile(fh) as zf:
            size = sum(i.file_size for i in zf.infolist())
            if size > limit_mb * 1e6:
                raise ValueError(f"{path}: its arrays take {size / 1e6:.3g} MB uncompressed, more than {limit_mb:g} MB")
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as z:
                d = {k: z[k] for k in z.files}
    except zipfile.BadZipFile:
        raise ValueError(f"{path}: not an NPZ results file of 'mbgen simulate'") from None
    except Exception as e:                 # ModelError (not a regular file), OSError, a damaged member
        if isinstance(e, ValueError) and str(e).startswith(path):
            raise
        raise ValueError(f"{path}: cannot be read as an NPZ results file ({' '.join(str(e).split())[:200]})") from None
    check_result_arrays(d, path)
    keys = {"t", "q", "u", "coord_names", "velocity_names", "body_names", "body_com", "body_quat",
            "energy_kinetic", "energy_potential", "meta"}
    return Result(d["t"], d["q"], d["u"], list(d["coord_names"]), list(d["velocity_names"]),
                  list(d["body_names"]), d["body_com"], d["body_quat"], d["energy_kinetic"],
                  d["energy_potential"], d["meta"], {k: v for k, v in d.items() if k not in keys})


def check_result_arrays(d: dict, path: str):
    """The checks of load_result on the arrays d (meta parsed in place); ValueError naming the array."""
    def bad(key, why):
        raise ValueError(f"{path}: {key}: {why}")

    for k in ("t", "q", "u", "coord_names", "velocity_names", "body_names", "body_com", "body_quat",
              "energy_kinetic", "energy_potential", "meta"):
        if k not in d:
            bad(k, "missing (not a results file of 'mbgen simulate')")
    try:
        meta = json.loads(str(d["meta"]))
    except ValueError:
        bad("meta", "not JSON")
    if not isinstance(meta, dict):
        bad("meta", "not a JSON object")
    d["meta"] = meta
    t = d["t"]
    nt = len(t) if t.ndim == 1 else bad("t", f"expected one dimension, got shape {t.shape}")
    names = {k: d[k] for k in ("coord_names", "velocity_names", "body_names")}
    for k, v in names.items():
        if v.ndim != 1 or v.dtype.kind not in "US":
            bad(k, "expected a list of strings")
    shapes = {"t": (nt,), "q": (nt, len(names["coord_names"])), "u": (nt, len(names["velocity_names"])),
              "body_com": (nt, len(names["body_names"]), 3), "body_quat": (nt, len(names["body_names"]), 4),
              "energy_kinetic": (nt,), "energy_potential": (nt,)}
    if "joint_pos" in d:
        nj = len(d.get("joint_parent", ()))
        shapes.update(joint_pos=(nt, nj, 3), joint_parent=(nj,), joint_child=(nj,))
    for k, shape in shapes.items():
        if k not in d:
            bad(k, "missing")
        a = d[k]
        if a.shape != shape:
            bad(k, f"expected shape {shape}, got {a.shape}")
        if a.dtype.kind not in "fiu":
            bad(k, f"expected numbers, got {a.dtype}")
        if k not in ("energy_kinetic", "energy_potential") and not np.all(np.isfinite(a)):   # (a diverged run's
            bad(k, "holds values that are not finite")                                      # energies may not be)
    if nt > 1 and not np.all(np.diff(t) > 0):
        bad("t", "not strictly increasing")
    if nt and float(np.abs(t).max()) > T_LIMIT:
        bad("t", f"times up to {float(np.abs(t).max()):.3g} s: outside the range of a simulation "
                 f"(|t| <= {T_LIMIT:g} s)")
    if "joint_pos" in d:
        nb = len(names["body_names"])
        for k, lo in (("joint_parent", -1), ("joint_child", 0)):
            if d[k].dtype.kind not in "iu" or (d[k].size and (d[k].min() < lo or d[k].max() >= nb)):
                bad(k, f"expected body indices in [{lo}, {nb})")


def plain(text) -> str:
    """A user string as matplotlib text: its $ escaped, so that it is never read as mathtext."""
    return str(text).replace("$", r"\$")


def atomic_write(path: str, writer):
    """Write a file atomically: writer(fh) into a temporary file, renamed over `path`.

    writer(fh) into a temporary file beside `path`, then rename it over `path`. The file gets the mode
    open() would give it (0o666 less the umask), not mkstemp's 0o600."""
    from ..compiler.entries import current_umask
    if os.path.lexists(path) and not os.path.isfile(path):       # a folder, a device (/dev/null), a FIFO
        raise ValueError(f"{path}: exists and is not a regular file; results are written to files only")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", suffix=os.path.splitext(path)[1], dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.chmod(tmp, 0o666 & ~current_umask())
            writer(fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


BeamResult = Result        # one Result for rigid and beam models (name kept for existing code)
