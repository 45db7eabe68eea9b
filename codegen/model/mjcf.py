"""MJCF (MuJoCo XML) files -> Model, through MuJoCo's own compiler.

MJCF (MuJoCo XML) files -> Model, through MuJoCo's own compiler (``mujoco.MjModel.from_xml_path``): defaults,
includes, ``inertiafromgeom``, angle units and frames are resolved by MuJoCo, and this module reads the compiled
arrays.

Mapping:

* bodies: ``body_mass``, centre ``body_ipos`` and inertia ``R(body_iquat) diag(body_inertia) R^T`` in the body
  frame; the body frame sits at ``body_pos``/``body_quat`` in its parent. A body without joints is lumped into
  its parent (into ``ground`` if it hangs from the world).
* joints: hinge -> revolute, slide -> prismatic (axis ``jnt_axis`` through the anchor ``jnt_pos``, both in the body
  frame), ball -> spherical at the anchor, free -> free. The coordinates *are* MuJoCo's qpos and qvel, in its order:
  the joint frames absorb ``ref`` (the reference position ``qpos0``), so our q equals qpos; the initial state is
  ``qpos0``; free and ball joints use the same quaternion order (w, x, y, z) and velocity frames as ours (linear
  velocity in the parent frame, angular velocity in the body frame).
* several joints in one body: MuJoCo applies them one after the other, each in the frame the previous ones moved;
  here each joint but the last gets a massless helper body ``BODY.JOINT`` (zero inertia), so the joints form a
  chain with exactly that kinematics.
* hinge and slide ``stiffness``/``springref`` and ``damping`` -> joint spring-dampers (as MuJoCo's passive forces).
* ``armature`` (``dof_armature``) -> the joint's armature, per velocity coordinate (added to the mass matrix's
  diagonal, as MuJoCo does).
* fixed tendons (every wrap a joint) -> fixed tendons (codegen.model.tendons): coefficients, stiffness, damping,
  rest length, limits; actuators on them.
* hinge and slide ``frictionloss`` -> Coulomb friction of the joint (regularised: templates/shared/friction.pyx.j2;
  MuJoCo's is a soft constraint of its solver).
* hinge and slide limits (``range`` where limited) with their ``solref`` (time constant, damping ratio) -> the
  joint's limits, a compliant spring-damper of that time constant (templates/shared/limits.pyx.j2; MuJoCo's own
  limit is a soft constraint of its solver: the same time scale, not the same force). Ball-joint limits (cones)
  and solref in the stiffness-damping form are refused.
* gravity: ``opt.gravity`` (zero if the file disables gravity).

* active ``connect`` and ``weld`` equality constraints between bodies -> spherical and fixed cut joints (the
  model's loops: solved by the recursive family with its constraint stabilisation; MuJoCo's own are soft
  constraints of its solver).
* active ``joint`` and ``tendon`` (fixed tendons) equality constraints -> couplings (codegen.model.couplings: one hard
  constraint row each, with the cut joints' Lagrange multipliers and stabilisation; MuJoCo's are soft), their
  polynomial shifted from MuJoCo's reference form y - y0 = p(x - x0) to y = p(x).

Refused with a message (they change the dynamics and have no counterpart here): site-based equality constraints
and tendon equalities on spatial tendons, spatial tendons (an unused one is left out), friction loss of ball and
free joints, gravity compensation, fluid forces, stiffness or damping of ball and free joints. Contacts (some pair of geoms can touch) are refused
too, unless ``ignore_contacts``: then the model is simulated without them and a ``ModelWarning`` says so.
* actuators with a hinge, slide or fixed-tendon transmission (motor, position, velocity, general affine; activation
  dynamics none, integrator, filter, filterexact with their time constant and actrange) -> general affine
  actuators (codegen.model.actuators), in MuJoCo's order, so ``ctrl`` is MuJoCo's; other transmissions, muscle and
  user dynamics and actearly are refused by name. ``ignore_actuators`` drops them
  all (with a ``ModelWarning``). Box, cylinder, capsule and sphere geoms are kept
in ``model.visuals`` (body frame, full lengths) for drawing.
* every MuJoCo body (welded ones too) and every site -> a frame of ``model.frames`` (``s.frames``,
  ``s.frame_jacobian``: docs/guide/kinematics.md), named as in the file.
"""
from __future__ import annotations

import os
import warnings
from typing import Dict, List

import numpy as np

from .checks import LIMITS, ModelError, _name
from .core import GROUND, Body, Joint, JointSpringDamper, Model, Placement
from .joint_types import JOINT_TYPES as OURS
from .massprops import lumped, moved
from .robotfiles import ModelWarning, listing, open_regular, parse_xml, read_limited, require, unique_name
from .rotations import quat_to_rot, rot_axis_angle

__all__ = ["ModelWarning", "load_mjcf", "model_from_mjmodel"]

MJT_JOINT = ("free", "ball", "slide", "hinge")                                   # mjtJoint's names
# mjtJoint -> ours: the type made of that one MuJoCo joint (JointType.mjcf)
JOINT_TYPES = {k: next(t.name for t in OURS.values() if [m for m, _ in t.mjcf] == [mj])
               for k, mj in enumerate(MJT_JOINT)}
GEOMS = {2: "sphere", 3: "capsule", 5: "cylinder", 6: "box"}                     # mjtGeom -> visuals


def load_mjcf(path, floating_base: bool = False, ignore_contacts: bool = False,
              ignore_actuators: bool = False) -> Model:
    """A validated Model from an MJCF file (see the module docstring)."""
    path = os.fspath(path)
    if floating_base:
        raise ModelError("floating_base (--floating-base) is for URDF files: an MJCF file gives its base a free "
                         "joint itself (<freejoint/>)", path)
    check_files(path)                                    # the file, its includes and assets: regular, limited
    mujoco = require("mujoco", path)
    try:
        mj = mujoco.MjModel.from_xml_path(path)
    except Exception as e:                               # MuJoCo's parser and compiler raise ValueError
        raise ModelError(f"not a valid MJCF file: {' '.join(str(e).split())[:300]}", path) from None
    return model_from_mjmodel(mj, path, ignore_contacts=ignore_contacts, ignore_actuators=ignore_actuators)


ASSET_FILES = {"mesh": ("file",), "skin": ("file",), "hfield": ("file",),
               "texture": ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")}


def check_files(path):
    """Check an MJCF file and everything it includes before MuJoCo reads anything.

    Before MuJoCo reads anything: the file and every <include> (recursively) are regular files within
    LIMITS['file_mb'] each, the asset files they name (meshes, textures, height fields, skins) that exist are
    regular files, all of them together within LIMITS['assets_mb'], and the <replicate> counts multiplied along
    their nesting stay within LIMITS['bodies'] (MuJoCo expands them in memory first). A FIFO, a device or a huge
    file is refused naming it; a missing file is left to MuJoCo's message."""
    from .checks import limits_text
    folder = os.path.dirname(os.path.abspath(path))
    todo, seen, total, dirs = [os.path.abspath(path)], set(), 0, {}
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        if len(seen) > 1000:
            raise ModelError("more than 1,000 included files", path)
        data = read_limited(f)
        total += len(data)
        root = parse_xml(data, f, "MJCF")
        for c in root.iter("compiler"):
            for k in ("meshdir", "texturedir", "assetdir"):
                if c.get(k) is not None:
                    dirs[k] = c.get(k)
        for inc in root.iter("include"):
            if inc.get("file"):
                todo.append(os.path.join(folder, inc.get("file")))
        for rep in root.iter("replicate"):
            n = 1
            for r in [rep] + [a for a in rep.iterancestors("replicate")]:
                try:
                    n *= max(int(r.get("count", "1")), 1)
                except ValueError:
                    break                                # MuJoCo reports a bad count
            if n > LIMITS["bodies"]:
                raise ModelError(f"<replicate> counts multiply to {n:,} copies (more than the {LIMITS['bodies']:,} "
                                 f"bodies a model may have; {limits_text()})", f)
        assets = [(el.tag, el.get(a)) for tag, attrs in ASSET_FILES.items() for el in root.iter(tag) for a in attrs
                  if el.get(a)]
        for tag, name in assets:
            sub_dir = dirs.get("meshdir" if tag in ("mesh", "skin") else "texturedir", dirs.get("assetdir", ""))
            for cand in dict.fromkeys((os.path.join(folder, sub_dir, name), os.path.join(folder, name))):
                if os.path.lexists(cand) and cand not in seen:
                    seen.add(cand)
                    with open_regular(cand) as fh:
                        total += os.fstat(fh.fileno()).st_size
        if total > LIMITS["assets_mb"] * 2 ** 20:
            raise ModelError(f"the file with its includes and assets is larger than {LIMITS['assets_mb']} MB "
                             f"({limits_text()})", path)


def _names(mj, mujoco, obj, n, prefix) -> List[str]:
    out = [mujoco.mj_id2name(mj, obj, i) or "" for i in range(n)]
    taken = {x: 1 for x in out if x}
    for i, x in enumerate(out):
        if not x:
            out[i] = unique_name(f"{prefix}{i}", taken)
            taken[out[i]] = 1
    return out


def _contact_pairs(mj, mujoco) -> List[tuple]:
    """Geom pairs MuJoCo's collision filter lets through.

    Geom pairs MuJoCo's collision filter lets through (contype/conaffinity, weld, parent and exclude filters),
    or explicit <pair>s; empty if the file disables contacts or constraints."""
    D = mujoco.mjtDisableBit
    if mj.opt.disableflags & (int(D.mjDSBL_CONTACT) | int(D.mjDSBL_CONSTRAINT)):
        return []
    pairs = [(int(a), int(b)) for a, b in zip(mj.pair_geom1, mj.pair_geom2)]
    if mj.ngeom < 2:
        return pairs
    weld = mj.body_weldid[mj.geom_bodyid]
    dad = mj.body_weldid[mj.body_parentid[weld]]
    ct, ca = mj.geom_contype.astype(np.int64), mj.geom_conaffinity.astype(np.int64)
    ok = ((ct[:, None] & ca[None, :]) != 0) | ((ca[:, None] & ct[None, :]) != 0)
    ok &= weld[:, None] != weld[None, :]
    ok &= ~((weld[:, None] == 0) & (weld[None, :] == 0))
    if not mj.opt.disableflags & int(D.mjDSBL_FILTERPARENT):
        ok &= ~(((weld[:, None] == dad[None, :]) & (dad[None, :] != 0)) | ((dad[:, None] == weld[None, :]) & (dad[:, None] != 0)))
    ok = np.triu(ok, 1)
    excluded = set(int(s) for s in mj.exclude_signature)
    b = mj.geom_bodyid
    for g1, g2 in zip(*np.nonzero(ok)):
        lo, hi = sorted((int(b[g1]), int(b[g2])))
        if (lo << 16) + hi not in excluded:
            pairs.append((int(g1), int(g2)))
            if len(pairs) > 3:
                break
    return pairs


def model_from_mjmodel(mj, path: str = "<mjcf>", ignore_contacts: bool = False,
                       ignore_actuators: bool = False) -> Model:
    """A Model from a compiled ``mujoco.MjModel``."""
    import mujoco
    O, D = mujoco.mjtObj, mujoco.mjtDisableBit
    bnames = _names(mj, mujoco, O.mjOBJ_BODY, mj.nbody, "body")
    jnames = _names(mj, mujoco, O.mjOBJ_JOINT, mj.njnt, "joint")
    gnames = _names(mj, mujoco, O.mjOBJ_GEOM, mj.ngeom, "geom")

    # what has no counterpart here
    problems = []
    enames = _names(mj, mujoco, O.mjOBJ_EQUALITY, mj.neq, "equality")
    for e in range(mj.neq):
        if not mj.eq_active0[e] or mj.opt.disableflags & int(D.mjDSBL_EQUALITY):
            continue                                     # inactive in the file: changes nothing
        if mj.eq_type[e] in (int(mujoco.mjtEq.mjEQ_JOINT), int(mujoco.mjtEq.mjEQ_TENDON)):
            continue                                     # couplings (_couplings; tendons: fixed ones, below)
        if mj.eq_type[e] not in (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)) \
                or mj.eq_objtype[e] != int(O.mjOBJ_BODY):
            kind = mujoco.mjtEq(int(mj.eq_type[e])).name.split('_', 1)[1].lower()
            problems.append(f"the {kind} equality constraint {enames[e]!r} (connect and weld constraints between "
                            "bodies are imported as cut joints, joint and fixed-tendon equalities as couplings; "
                            "site-based and other equalities are not)")
    used = set(mj.actuator_trnid[mj.actuator_trntype == int(mujoco.mjtTrn.mjTRN_TENDON), 0].tolist()) \
        if mj.nu and not ignore_actuators and not mj.opt.disableflags & int(D.mjDSBL_ACTUATION) else set()
    tnames = _names(mj, mujoco, O.mjOBJ_TENDON, mj.ntendon, "tendon")
    fixed = _fixed_tendons(mj)
    for e in _equalities(mj, mujoco, int(mujoco.mjtEq.mjEQ_TENDON)):
        bad = [tnames[t] for t in (mj.eq_obj1id[e], mj.eq_obj2id[e]) if t >= 0 and t not in fixed]
        if bad:
            problems.append(f"the tendon equality constraint {enames[e]!r} on the spatial tendon "
                            f"{listing(bad)} (tendon equalities couple fixed tendons)")
        used.update(int(t) for t in (mj.eq_obj1id[e], mj.eq_obj2id[e]) if t >= 0)
    spatial = [t for t in range(mj.ntendon) if t not in fixed and (t in used or mj.tendon_stiffness[t]
                                                                   or mj.tendon_damping[t] or mj.tendon_limited[t])]
    if spatial:                                          # an unused spatial tendon changes nothing: left out
        problems.append(f"{len(spatial)} spatial tendons ({listing(tnames[t] for t in spatial)}: tendons through "
                        "sites and geoms are not modelled; fixed tendons are)")
    for t in fixed:
        why = [w for w, bad in (("armature", mj.tendon_armature[t]), ("friction loss", mj.tendon_frictionloss[t]),
                                ("a dead-band spring", mj.tendon_lengthspring[t, 0] != mj.tendon_lengthspring[t, 1]),
                                ("limit solref in the stiffness-damping form", mj.tendon_limited[t] and not np.all(
                                    mj.tendon_solref_lim[t] > 0))) if bad]
        if why:
            problems.append(f"{' and '.join(why)} on the tendon {tnames[t]!r}")
    bad = [jnames[mj.dof_jntid[i]] for i in np.flatnonzero(mj.dof_frictionloss) if mj.jnt_type[mj.dof_jntid[i]] < 2]
    if bad:
        problems.append(f"friction loss on the ball or free joints {listing(dict.fromkeys(bad))} (hinge and slide "
                        "joints take it)")
    if np.any(mj.body_gravcomp):
        problems.append(f"gravity compensation on bodies {listing(bnames[i] for i in np.flatnonzero(mj.body_gravcomp))}")
    if mj.opt.density or mj.opt.viscosity:
        problems.append("fluid forces (option density / viscosity)")
    for field, what in (("actuator_damping", "actuator damping"), ("actuator_armature", "actuator armature"),
                        ("actuator_dampingpoly", "actuator damping polynomials"),
                        ("dof_dampingpoly", "joint damping polynomials"),
                        ("tendon_dampingpoly", "tendon damping polynomials")):
        if np.any(getattr(mj, field, 0)):      # MuJoCo 3.5+ passive terms, not read here
            problems.append(f"{what} ({field})")
    springs_on = not mj.opt.disableflags & int(D.mjDSBL_SPRING)
    dampers_on = not mj.opt.disableflags & int(D.mjDSBL_DAMPER)
    for j in range(mj.njnt):
        if mj.jnt_type[j] in (0, 1):
            adr = mj.jnt_dofadr[j]
            if (springs_on and mj.jnt_stiffness[j]) or (dampers_on and np.any(mj.dof_damping[adr:adr + 3 + 3 * (mj.jnt_type[j] == 0)])):
                problems.append(f"stiffness or damping on the {JOINT_TYPES[mj.jnt_type[j]]} joint {jnames[j]!r} "
                                "(only hinge and slide joints take them)")
        if mj.jnt_limited[j] and mj.jnt_type[j] == 1:
            problems.append(f"the limit (a cone) of the ball joint {jnames[j]!r} (limits bound hinge and slide joints)")
        if mj.jnt_limited[j] and mj.jnt_type[j] in (2, 3) and not np.all(mj.jnt_solref[j] > 0):
            problems.append(f"solref {mj.jnt_solref[j].tolist()} of the limit of joint {jnames[j]!r} (only the "
                            "time constant and damping ratio form, both > 0)")
        if mj.jnt_type[j] == 0 and mj.body_parentid[mj.jnt_bodyid[j]] != 0:
            problems.append(f"the free joint {jnames[j]!r} is not in a top-level body")
    ignored = []
    contacts = _contact_pairs(mj, mujoco)
    if contacts:
        g1, g2 = contacts[0]
        text = f"contacts (geoms {gnames[g1]!r} and {gnames[g2]!r} can touch)"
        (ignored if ignore_contacts else problems).append(text if ignore_contacts else text + ": there is no contact "
                                                          "model; ignore_contacts=True (--ignore-contacts) simulates "
                                                          "without them, or disable them in the file "
                                                          "(<option><flag contact=\"disable\"/></option>)")
    actuated = mj.nu and not mj.opt.disableflags & int(D.mjDSBL_ACTUATION)
    if actuated and ignore_actuators:
        ignored.append(f"{mj.nu} actuators ({listing(_names(mj, mujoco, O.mjOBJ_ACTUATOR, mj.nu, 'actuator'), 3)})")
    elif actuated:
        problems += _actuator_problems(mj, mujoco, jnames)
    if problems:
        raise ModelError("cannot be simulated as it is: " + "; ".join(problems), path)
    if ignored:
        warnings.warn(f"{path}: left out on request: {'; '.join(ignored)}", ModelWarning, stacklevel=3)

    # bodies and joints, in MuJoCo's order (bodies depth first, joints in body order)
    taken = {GROUND: 1, **{n: 1 for n in jnames}}
    body_name = ["ground"] + [None] * (mj.nbody - 1)
    for i in range(1, mj.nbody):
        body_name[i] = unique_name(bnames[i] if bnames[i] not in taken else f"{bnames[i]}_body", taken)
        taken[body_name[i]] = 1
    for n in (*jnames, *body_name):
        _name(n, path, "name", "name", printable=True)
    anchor = {0: (GROUND, np.zeros(3), np.eye(3))}        # body id -> (our body, pose of its frame in it)
    members: Dict[str, List[int]] = {}
    bodies, joints, springs = [], [], []
    qpos0 = np.asarray(mj.qpos0, float)
    for i in range(1, mj.nbody):
        par, ppos, prot = anchor[int(mj.body_parentid[i])]
        pos = ppos + prot @ mj.body_pos[i]
        rot = prot @ quat_to_rot(mj.body_quat[i])
        ids = range(mj.body_jntadr[i], mj.body_jntadr[i] + mj.body_jntnum[i])
        if not len(ids):                                   # welded: lumped into its parent
            anchor[i] = (par, pos, rot)
            members.setdefault(par, []).append(i)
            continue
        for k, j in enumerate(ids):
            jt = JOINT_TYPES[int(mj.jnt_type[j])]
            a, axis = np.asarray(mj.jnt_pos[j], float), np.asarray(mj.jnt_axis[j], float)
            child = body_name[i] if k == len(ids) - 1 else unique_name(f"{body_name[i]}.{jnames[j]}", taken)
            taken[child] = 1
            q0 = qpos0[mj.jnt_qposadr[j]:mj.jnt_qposadr[j] + OURS[jt].nq]
            if jt == "free":                                # qpos: the body frame in the world
                pf, cf = Placement(), Placement()
            else:
                fpos, frot = (pos + rot @ a, rot) if k == 0 else (a, np.eye(3))
                if jt == "revolute":                        # our q = qpos: the frame absorbs ref = qpos0
                    frot = frot @ rot_axis_angle(axis, -q0[0])
                elif jt == "prismatic":
                    fpos = fpos - frot @ axis * q0[0]
                pf, cf = Placement(fpos, frot), Placement(a, np.eye(3))
            adr = int(mj.jnt_dofadr[j])
            arm = np.array(mj.dof_armature[adr:adr + OURS[jt].nv], float)
            scalar = OURS[jt].scalar                         # hinge, slide: one coordinate along an axis
            lim = mj.jnt_limited[j] and scalar
            joints.append(Joint(jnames[j], jt, par, child, pf, cf, axis=axis if scalar
                                else None, q0=q0.copy(), armature=arm if np.any(arm) else None,
                                limits=np.array([mj.jnt_range[j]], float) if lim else None,
                                limit_solref=np.array(mj.jnt_solref[j], float) if lim else None,
                                friction=[float(mj.dof_frictionloss[adr])] if scalar
                                and mj.dof_frictionloss[adr] else None))
            if k < len(ids) - 1:
                bodies.append(Body(child, 0.0, np.zeros(3), np.zeros((3, 3))))
            par = child
            if scalar:
                k_s = float(mj.jnt_stiffness[j]) if springs_on else 0.0
                d_s = float(mj.dof_damping[mj.jnt_dofadr[j]]) if dampers_on else 0.0
                if k_s or d_s:
                    springs.append(JointSpringDamper(unique_name(f"{jnames[j]}.passive", taken), jnames[j], k_s, d_s,
                                                     float(mj.qpos_spring[mj.jnt_qposadr[j]])))
                    taken[springs[-1].name] = 1
        anchor[i] = (body_name[i], np.zeros(3), np.eye(3))
        members.setdefault(body_name[i], []).append(i)
        bodies.append(Body(body_name[i], 0.0))             # mass properties below
    if not joints:
        raise ModelError("no joints: every body is welded to the world, nothing moves", path)
    by_name = {b.name: b for b in bodies}
    for name, ids in members.items():
        if name == GROUND:
            continue
        parts = []
        for i in ids:
            _, pos, rot = anchor[i]
            R = quat_to_rot(mj.body_iquat[i])
            parts.append(moved(float(mj.body_mass[i]), mj.body_ipos[i], R @ np.diag(mj.body_inertia[i]) @ R.T, pos, rot))
        m, c, J = lumped(parts)
        b = by_name[name]
        b.mass, b.com, b.inertia = m, c, J
    cuts = _connects(mj, mujoco, anchor, enames, taken)
    gravity = np.zeros(3) if mj.opt.disableflags & int(D.mjDSBL_GRAVITY) else np.array(mj.opt.gravity, float)
    tendons = [_tendon(mj, t, tnames, jnames, taken) for t in fixed]
    tmap = {t: ten.name for t, ten in zip(fixed, tendons)}
    actuators = _actuators(mj, mujoco, jnames, tmap, taken) if actuated and not ignore_actuators else []
    couplings = _couplings(mj, mujoco, jnames, tmap, enames, taken, joints)
    model = Model(mujoco.mj_id2name(mj, O.mjOBJ_MODEL, 0) or os.path.splitext(os.path.basename(path))[0] or "mjcf",
                  bodies, joints, gravity=gravity, springs=springs, source=path, actuators=actuators,
                  tendons=tendons, cuts=cuts, couplings=couplings, allow_nonphysical_inertia=True)
    model.visuals = _visuals(mj, anchor, gnames)
    model.frames = _frames(mj, mujoco, anchor, bnames)
    model.simulation = _simulation(mj, mujoco, path)
    return model


# MuJoCo's integrators (mjtIntegrator) -> ours of the same definition (codegen.runtime: euler, implicitfast, implicit
# are MuJoCo's single steps; rk4 equals MuJoCo's RK4 on hinge and slide joints, docs/guide/integrators.md)
MJ_INTEGRATORS = {"mjINT_EULER": "euler", "mjINT_RK4": "rk4", "mjINT_IMPLICIT": "implicit",
                  "mjINT_IMPLICITFAST": "implicitfast"}


def _simulation(mj, mujoco, path) -> dict:
    """The file's run defaults: dt = its timestep (one step per sample) and its integrator.

    A ModelWarning names an integrator we do not have, or Euler with its implicit damping disabled, and leaves the
    default."""
    out = {"dt": float(mj.opt.timestep)}
    name = next((n for n in MJ_INTEGRATORS if int(getattr(mujoco.mjtIntegrator, n)) == int(mj.opt.integrator)), None)
    if name is None:
        kind = next((n for n in dir(mujoco.mjtIntegrator) if n.startswith("mjINT_")
                     and int(getattr(mujoco.mjtIntegrator, n)) == int(mj.opt.integrator)), str(mj.opt.integrator))
        warnings.warn(f"{path}: option integrator {kind}: not one of ours (MuJoCo's Euler, RK4, implicit, "
                      "implicitfast); runs default to rk4", ModelWarning, stacklevel=3)
    elif name == "mjINT_EULER" and mj.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP):
        warnings.warn(f"{path}: option integrator Euler with eulerdamp disabled (fully explicit): our euler takes "
                      "the joint dampers implicitly; runs default to rk4", ModelWarning, stacklevel=3)
    else:
        out["integrator"] = MJ_INTEGRATORS[name]
    return out


def _frames(mj, mujoco, anchor, bnames) -> Dict[str, tuple]:
    """Every MuJoCo body and site as a frame.

    Name -> (our body, position, rotation in its frame), welded bodies lumped into another too, for the kinematics
    (codegen.runtime.kinematics: s.frames)."""
    out = {bnames[i]: (anchor[i][0], anchor[i][1].tolist(), anchor[i][2].tolist()) for i in range(1, mj.nbody)}
    snames = _names(mj, mujoco, mujoco.mjtObj.mjOBJ_SITE, mj.nsite, "site")
    for k in range(mj.nsite):
        body, pos, rot = anchor[int(mj.site_bodyid[k])]
        name = snames[k] if snames[k] not in out else unique_name(f"site:{snames[k]}", out)
        out[name] = (body, (pos + rot @ mj.site_pos[k]).tolist(), (rot @ quat_to_rot(mj.site_quat[k])).tolist())
    return out


def _actuator_problems(mj, mujoco, jnames) -> List[str]:
    """What of the file's actuators has no counterpart, one line per reason.

    What of the file's actuators has no counterpart: other transmissions than a hinge or slide joint or a fixed
    tendon, activation dynamics, gain or bias types beyond affine; one line per reason, naming the actuators."""
    names = _names(mj, mujoco, mujoco.mjtObj.mjOBJ_ACTUATOR, mj.nu, "actuator")
    kind = lambda enum, v: enum(int(v)).name.split("_", 1)[1].lower()      # noqa: E731  mjTRN_SITE -> site
    J, T = int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_TENDON)
    fixed = _fixed_tendons(mj)
    why: Dict[str, List[str]] = {}
    for i in range(mj.nu):
        trn, target = int(mj.actuator_trntype[i]), int(mj.actuator_trnid[i, 0])
        if trn not in (J, T):
            w = f"transmission {kind(mujoco.mjtTrn, trn)} (joints and fixed tendons are modelled)"
        elif trn == T:
            w = "a spatial tendon transmission" if target not in fixed else None
        elif mj.jnt_type[target] not in (2, 3):
            w = f"a {JOINT_TYPES[int(mj.jnt_type[target])]} joint transmission (only hinge and slide joints)"
        elif int(mj.actuator_dyntype[i]) not in MJ_DYNAMICS:
            w = f"activation dynamics {kind(mujoco.mjtDyn, mj.actuator_dyntype[i])} (none, integrator, filter and " \
                "filterexact are modelled)"
        elif int(mj.actuator_dyntype[i]) != 0 and bool(getattr(mj, "actuator_actearly", [0] * mj.nu)[i]):
            w = "actearly (the force from the next step's activation: a discrete-time lead our integrators do not " \
                "take)"
        elif int(mj.actuator_dyntype[i]) != 0 and int(mj.actuator_actnum[i]) != 1:
            w = "more than one activation state"
        elif mj.actuator_gaintype[i] not in (0, 1) or mj.actuator_biastype[i] not in (0, 1):
            w = "a gain or bias type beyond affine"
        else:
            w = None
        if w:
            why.setdefault(w, []).append(names[i])
    return [f"{len(n)} actuator{'s' if len(n) > 1 else ''} ({listing(n, 3)}) with {w}" for w, n in why.items()]


def _connects(mj, mujoco, anchor, enames, taken) -> List[Joint]:
    """Active connect and weld constraints between two bodies as cut joints.

    Each frame moved into the frame of the
    body it was lumped into; a constraint to the world hangs from ground (the child side must be a body).
    connect -> spherical: the anchor in body1's frame (eq_data[0:3]) and the same point in body2's frame at qpos0
    (eq_data[3:6], from MuJoCo's compiler). weld -> fixed: body1's frame at relpose (eq_data[3:6] position,
    eq_data[6:10] quaternion) and body2's frame at the anchor (eq_data[0:3]) coincide."""
    out = []
    for e in range(mj.neq):
        if not mj.eq_active0[e] or mj.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_EQUALITY) \
                or mj.eq_type[e] not in (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)):
            continue
        d = np.asarray(mj.eq_data[e], float)
        weld = mj.eq_type[e] == int(mujoco.mjtEq.mjEQ_WELD)
        local = [(d[3:6], quat_to_rot(d[6:10])), (d[0:3], np.eye(3))] if weld else \
            [(d[0:3], np.eye(3)), (d[3:6], np.eye(3))]
        ends = [(anchor[int(b)], f) for b, f in zip((mj.eq_obj1id[e], mj.eq_obj2id[e]), local)]
        if ends[1][0][0] == GROUND:
            ends.reverse()
        frames = [Placement(p + R @ a, R @ Ra) for (_, p, R), (a, Ra) in ends]
        name = unique_name(enames[e] or f"{'weld' if weld else 'connect'}{e}", taken)
        taken[name] = 1
        out.append(Joint(name, "fixed" if weld else "spherical", ends[0][0][0], ends[1][0][0], *frames))
    return out


def _equalities(mj, mujoco, kind) -> List[int]:
    """The active equality constraints of one mjtEq kind."""
    if mj.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_EQUALITY):
        return []
    return [e for e in range(mj.neq) if mj.eq_active0[e] and mj.eq_type[e] == kind]


def _couplings(mj, mujoco, jnames, tmap, enames, taken, joints) -> list:
    """Active joint and (fixed) tendon equality constraints as couplings.

    MuJoCo's hold relative to the reference
    configuration: y - y0 = c0 + c1 (x - x0) + ... + c4 (x - x0)^4 (y, x: joint1's and joint2's qpos, or tendon1's
    and tendon2's length; y0, x0: at qpos0; no joint2 / tendon2: y - y0 = c0), so the polynomial is shifted to ours,
    y = p(x) (couplings.shifted). Where c0 != 0, qpos0 violates a joint coupling: joint1's q0 is set to y0 + p(x0)."""
    from .couplings import Coupling, shifted
    qpos0 = np.asarray(mj.qpos0, float)
    by_name = {j.name: j for j in joints}
    out = []
    for kind in (int(mujoco.mjtEq.mjEQ_JOINT), int(mujoco.mjtEq.mjEQ_TENDON)):
        for e in _equalities(mj, mujoco, kind):
            ids = [int(mj.eq_obj1id[e]), int(mj.eq_obj2id[e])]
            if kind == int(mujoco.mjtEq.mjEQ_JOINT):
                ref = [qpos0[mj.jnt_qposadr[i]] if i >= 0 else 0.0 for i in ids]
                names = [jnames[i] if i >= 0 else None for i in ids]
            else:
                ref = [float(mj.tendon_length0[i]) if i >= 0 else 0.0 for i in ids]
                names = [tmap[i] if i >= 0 else None for i in ids]
            c = np.asarray(mj.eq_data[e, :5], float) if ids[1] >= 0 else np.array([mj.eq_data[e, 0], 0, 0, 0, 0])
            name = unique_name(enames[e] or f"{'joint' if kind == int(mujoco.mjtEq.mjEQ_JOINT) else 'tendon'}{e}",
                               taken)
            taken[name] = 1
            if kind == int(mujoco.mjtEq.mjEQ_JOINT):
                out.append(Coupling(name, names[0], names[1], shifted(c, ref[0], ref[1])))
                if c[0]:
                    by_name[names[0]].q0 = np.array([ref[0] + c[0]])
            else:
                out.append(Coupling(name, polycoef=shifted(c, ref[0], ref[1]), tendon=names[0], tendon2=names[1]))
    return out


def _fixed_tendons(mj) -> List[int]:
    """The tendons whose every wrap is a joint (mjWRAP_JOINT): fixed tendons."""
    return [t for t in range(mj.ntendon)
            if all(mj.wrap_type[w] == 1 for w in range(mj.tendon_adr[t], mj.tendon_adr[t] + mj.tendon_num[t]))]


def _tendon(mj, t, tnames, jnames, taken):
    """A fixed tendon.

    Its joints and coefficients (wrap_objid, wrap_prm), stiffness, damping, rest length
    (lengthspring), limits (range, solreflimit)."""
    from .tendons import Tendon, TendonJoint
    ws = range(mj.tendon_adr[t], mj.tendon_adr[t] + mj.tendon_num[t])
    name = unique_name(tnames[t] or f"tendon{t}", taken)
    taken[name] = 1
    lim = bool(mj.tendon_limited[t])
    return Tendon(name, [TendonJoint(jnames[mj.wrap_objid[w]], float(mj.wrap_prm[w])) for w in ws],
                  float(mj.tendon_stiffness[t]), float(mj.tendon_damping[t]), float(mj.tendon_lengthspring[t, 0]),
                  np.array(mj.tendon_range[t], float) if lim else None,
                  np.array(mj.tendon_solref_lim[t], float) if lim else None)


def _actuators(mj, mujoco, jnames, tmap, taken) -> list:
    """MuJoCo's actuators as general affine actuators.

    MuJoCo's actuators (joint or fixed-tendon transmission; activation dynamics none, integrator, filter or
    filterexact with dynprm[0] and actrange) as general affine actuators,
    in its order (tmap: tendon id -> our tendon's name):
    gain (gainprm[0], or gainprm[0:3] when affine), bias (biasprm[0:3] when affine), gear[0], ctrlrange and
    forcerange when limited."""
    from .actuators import Actuator
    names = _names(mj, mujoco, mujoco.mjtObj.mjOBJ_ACTUATOR, mj.nu, "actuator")
    out = []
    for i in range(mj.nu):
        g = np.array(mj.actuator_gainprm[i, :3], float) if mj.actuator_gaintype[i] == 1 else \
            np.array([mj.actuator_gainprm[i, 0], 0.0, 0.0])
        b = np.array(mj.actuator_biasprm[i, :3], float) if mj.actuator_biastype[i] == 1 else np.zeros(3)
        name = unique_name(names[i] or f"actuator{i}", taken)
        taken[name] = 1
        on_tendon = int(mj.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_TENDON)
        out.append(Actuator(name, None if on_tendon else jnames[mj.actuator_trnid[i, 0]], "general",
                            tendon=tmap[int(mj.actuator_trnid[i, 0])] if on_tendon else None,
                            gear=float(mj.actuator_gear[i, 0]),
                            gain=g, bias=b,
                            ctrlrange=np.array(mj.actuator_ctrlrange[i], float) if mj.actuator_ctrllimited[i] else None,
                            forcerange=np.array(mj.actuator_forcerange[i], float) if mj.actuator_forcelimited[i]
                            else None, **_activation(mj, i)))
    return out


MJ_DYNAMICS = {0: "none", 1: "integrator", 2: "filter", 3: "filterexact"}    # mjtDyn -> our dynamics


def _activation(mj, i) -> dict:
    """The activation dynamics of actuator i (MuJoCo's dyntype, dynprm[0], actrange when actlimited)."""
    dyn = MJ_DYNAMICS[int(mj.actuator_dyntype[i])]
    if dyn == "none":
        return {}
    return {"dynamics": dyn, "timeconst": float(mj.actuator_dynprm[i, 0]) if dyn != "integrator" else 0.0,
            "actrange": np.array(mj.actuator_actrange[i], float) if mj.actuator_actlimited[i] else None}


def _visuals(mj, anchor, gnames) -> Dict[str, List[dict]]:
    out: Dict[str, List[dict]] = {}
    for g in range(mj.ngeom):
        kind = GEOMS.get(int(mj.geom_type[g]))
        if kind is None:
            continue
        body, pos, rot = anchor[int(mj.geom_bodyid[g])]
        s = np.asarray(mj.geom_size[g], float)
        size = {"sphere": [s[0]], "capsule": [s[0], 2 * s[1]], "cylinder": [s[0], 2 * s[1]], "box": list(2 * s)}[kind]
        out.setdefault(body, []).append({"type": kind, "size": [float(x) for x in size], "name": gnames[g],
                                         "pos": (pos + rot @ mj.geom_pos[g]).tolist(),
                                         "rot": (rot @ quat_to_rot(mj.geom_quat[g])).tolist()})
    return out
