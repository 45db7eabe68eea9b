"""MJCF frames against MuJoCo: every site and body of a file (welded bodies and world sites too) as a frame.

MuJoCo's own arrays after mj_kinematics / mj_comPos at the same qpos (our q is MuJoCo's qpos, our u its qvel):
site_xpos, site_xmat and mj_jacSite (rows: our local_world_aligned Jacobian, (jacr; jacp)), mj_jacDot at the
site (its rate; MuJoCo rates a column with its body's velocity, dJ/dt for hinge, slide, ball and free joints, the
file's), xpos and xmat of
bodies, subtree_com and the total mass, mj_objectVelocity of sites (rot:lin, world or local orientation)."""
import numpy as np
import pytest

import codegen
from support.systems import ROOT, get_system

pytestmark = pytest.mark.build
mujoco = pytest.importorskip("mujoco")

FILE = ROOT / "tests" / "model" / "mjcf" / "sites_tree.xml"
TOL = 1e-10


def test_sites_and_bodies_against_mujoco():
    m = codegen.load_model(str(FILE))
    s = get_system(m)
    mj = mujoco.MjModel.from_xml_path(str(FILE))
    d = mujoco.MjData(mj)
    sites = [mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SITE, k) for k in range(mj.nsite)]
    bodies = [mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(1, mj.nbody)]
    assert set(sites + bodies) <= set(s.frames) and "head" not in s.body_names     # head is welded to the torso
    rng = np.random.default_rng(8)
    jacp, jacr = np.zeros((3, mj.nv)), np.zeros((3, mj.nv))
    vel = np.zeros(6)
    for _ in range(4):
        q = rng.normal(size=mj.nq)
        for j in range(mj.njnt):                         # unit quaternions
            if mj.jnt_type[j] in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
                o = mj.jnt_qposadr[j] + (3 if mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE else 0)
                q[o:o + 4] /= np.linalg.norm(q[o:o + 4])
        u = rng.normal(size=mj.nv)
        d.qpos[:], d.qvel[:] = q, u
        mujoco.mj_forward(mj, d)
        for k, name in enumerate(sites):
            R, p = s.frame_placement(q, name)
            assert np.abs(p - d.site_xpos[k]).max() < TOL and np.abs(R - d.site_xmat[k].reshape(3, 3)).max() < TOL
            mujoco.mj_jacSite(mj, d, jacp, jacr, k)
            J = s.frame_jacobian(q, name, "local_world_aligned")
            assert np.abs(J - np.vstack([jacr, jacp])).max() < TOL, name
            mujoco.mj_jacDot(mj, d, jacp, jacr, d.site_xpos[k], mj.site_bodyid[k])
            Jd = s.frame_jacobian_dot(q, u, name, "local_world_aligned")
            assert np.abs(Jd - np.vstack([jacr, jacp])).max() < TOL, name
            for local, ref in ((0, "local_world_aligned"), (1, "local")):
                mujoco.mj_objectVelocity(mj, d, mujoco.mjtObj.mjOBJ_SITE, k, vel, local)
                assert np.abs(s.frame_velocity(q, u, name, ref) - vel).max() < TOL, (name, ref)
        for i, name in enumerate(bodies, 1):
            R, p = s.frame_placement(q, name)
            assert np.abs(p - d.xpos[i]).max() < TOL and np.abs(R - d.xmat[i].reshape(3, 3)).max() < TOL
        mass, com = s.subtree_mass(q)
        for i, name in enumerate(bodies, 1):
            if name in s.body_names:
                b = s.body_names.index(name)
                assert abs(mass[b] - mj.body_subtreemass[i]) < TOL
                assert np.abs(com[b] - d.subtree_com[i]).max() < TOL, name
        c = s.center_of_mass(q, u)
        assert abs(c.mass - mj.body_subtreemass[0]) < TOL and np.abs(c.position - d.subtree_com[0]).max() < TOL
