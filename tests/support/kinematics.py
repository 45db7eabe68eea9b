"""Our kinematics against pinocchio's, the convention mapping written once.

Ours: 6-vectors (angular; linear), u our velocities; pinocchio: Motion/Force (linear; angular), v = T u with
dv/dt = T udot + c (the peers' T and c: a free joint's linear velocity is world-frame in ours, local in
pinocchio's). References by name: ours "local", "world", "local_world_aligned" are pinocchio's LOCAL, WORLD and
LOCAL_WORLD_ALIGNED. Derivatives with respect to q are in tangent coordinates on both sides; ours keep u fixed,
pinocchio's v = T u, so ours = pinocchio's T + (its dv) d(T u)/dq (peer.dTu). pinocchio's LOCAL_WORLD_ALIGNED
velocity derivative is not the derivative of its LOCAL_WORLD_ALIGNED velocity (central differences of
getFrameVelocity disagree with it), nor its WORLD acceleration q-derivative that of its WORLD acceleration, and its
composite joints' tangents are not ours: those are checked against
central differences of our own velocities (test_kinematics_derivatives_by_differences).

Jacobian rates: pinocchio's getFrameJacobianTimeVariation (and dccrba, built on it) rates each joint's columns
with its child body's velocity (ov_i x J_i), the time derivative of J only where the joint's columns are fixed in
its child: every one-velocity joint, the spherical joint and the free flyer. The planar and universal joints the
peer builds as composites have columns fixed in the parent (or between): ours are dJ/dt, so those columns are
compared against central differences of our Jacobians instead (test_kinematics_rates_by_differences)."""
import numpy as np
import pinocchio as pin

from support import peers_from_file as pf

REFERENCES = {"local": pin.LOCAL, "world": pin.WORLD, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}


def ours(x):
    """pinocchio's (linear; angular) 6-vector, or 6 x n rows, as ours (angular; linear)."""
    x = np.asarray(x)
    return np.concatenate([x[3:], x[:3]])


def compare(s, peer, frames, states, worst=None):
    """Worst error (relative to max(1, |reference|)) per quantity over `states` [(q, u, udot)], for `frames`
    {our name: pinocchio frame id}. `peer`: a pinocchio model in our coordinates (q_pin, T, c, model, data)."""
    worst = {} if worst is None else worst
    pm, pd = peer.model, peer.data

    def rec(key, a, b):
        worst[key] = max(worst.get(key, 0.0), rel_err(a, b))

    exact = np.ones(s.nv, bool)                  # columns whose pinocchio rate is dJ/dt (module docstring)
    for t, _, iv, _, _ in peer.layout:
        if t in ("planar", "universal"):
            exact[iv:iv + pf.NQ_NV[t][1]] = False

    def rate(key, a, b):
        rec(key, np.asarray(a)[:, exact], np.asarray(b)[:, exact])

    for q, u, ud in states:
        T, c, Td = peer.T(q), peer.c(q, u), peer.Tdot(q, u)
        assert np.allclose(Td @ u, c)
        qp, v, a = peer.q_pin(q), T @ u, T @ ud + c
        pin.computeForwardKinematicsDerivatives(pm, pd, qp, v, a)
        for name, fid in frames.items():                # d(velocity)/dq: ours = dv_dq_pin T + J_pin d(T u)/dq
            for ref in ("local", "world"):
                dq, dv = pin.getFrameVelocityDerivatives(pm, pd, fid, REFERENCES[ref])
                rate(f"velocity derivative {ref}", s.frame_velocity_derivatives(q, u, name, ref)[0],
                     ours(dq @ T + dv @ peer.dTu(q, u)))
        if all(lay[0] != "free" for lay in peer.layout):   # acceleration derivatives: no free joint, T a permutation
            for name, fid in frames.items():
                for ref in ("local", "world"):
                    _, da_dq, da_dv, _ = pin.getFrameAccelerationDerivatives(pm, pd, fid, REFERENCES[ref])
                    dq, du, _ = s.frame_acceleration_derivatives(q, u, ud, name, ref)
                    if ref == "local":
                        rate("acceleration derivative dq local", dq, ours(da_dq @ T))
                    rate(f"acceleration derivative du {ref}", du, ours(da_dv @ T))
        pin.computeJointJacobiansTimeVariation(pm, pd, qp, v)
        pin.forwardKinematics(pm, pd, qp, v, a)
        pin.updateFramePlacements(pm, pd)
        pin.computeJointJacobians(pm, pd, qp)
        for name, fid in frames.items():
            R, p = s.frame_placement(q, name)
            rec("rotation", R, pd.oMf[fid].rotation)
            rec("position", p, pd.oMf[fid].translation)
            for ref, pr in REFERENCES.items():
                rec(f"velocity {ref}", s.frame_velocity(q, u, name, ref),
                    ours(pin.getFrameVelocity(pm, pd, fid, pr).vector))
                rec(f"acceleration {ref}", s.frame_acceleration(q, u, ud, name, ref),
                    ours(pin.getFrameAcceleration(pm, pd, fid, pr).vector))
                rec(f"classical acceleration {ref}", s.frame_classical_acceleration(q, u, ud, name, ref),
                    ours(pin.getFrameClassicalAcceleration(pm, pd, fid, pr).vector))
                Jp = pin.getFrameJacobian(pm, pd, fid, pr)
                rec(f"jacobian {ref}", s.frame_jacobian(q, name, ref), ours(Jp @ T))
                rate(f"jacobian rate {ref}", s.frame_jacobian_dot(q, u, name, ref),
                    ours(pin.getFrameJacobianTimeVariation(pm, pd, fid, pr) @ T + Jp @ Td))
        pin.centerOfMass(pm, pd, qp, v, a)
        com = s.center_of_mass(q, u, ud)
        rec("com", com.position, pd.com[0])
        rec("com velocity", com.velocity, pd.vcom[0])
        rec("com acceleration", com.acceleration, pd.acom[0])
        rec("com jacobian", s.com_jacobian(q), pin.jacobianCenterOfMass(pm, pd, qp) @ T)
        pin.computeCentroidalMomentumTimeVariation(pm, pd, qp, v, a)
        pin.ccrba(pm, pd, qp, v)
        cen = s.centroidal(q, u, ud)
        rec("A_G", cen.A_G, ours(pd.Ag) @ T)
        Ag = np.array(pd.Ag)
        pin.dccrba(pm, pd, qp, v)
        rate("A_G rate", cen.A_G_dot, ours(np.asarray(pd.dAg) @ T + Ag @ Td))
        dh_dq, dhd_dq, dhd_dv, _ = pin.computeCentroidalDynamicsDerivatives(pm, pd, qp, v, a)
        if all(lay[0] != "free" for lay in peer.layout):   # the rate's derivatives: no free joint, T a permutation
            dq, du, _ = s.centroidal_rate_derivatives(q, u, ud)
            rate("h_G rate derivative dq", dq, ours(np.asarray(dhd_dq) @ T))
            rate("h_G rate derivative du", du, ours(np.asarray(dhd_dv) @ T))
        rate("h_G derivative", s.centroidal_derivatives(q, u)[0], ours(np.asarray(dh_dq) @ T + Ag @ peer.dTu(q, u)))
        rec("h_G", cen.h_G, ours(pd.hg.vector))
        Ig = pd.Ig.matrix()
        rec("I_G", cen.I_G, np.block([[Ig[3:, 3:], Ig[3:, :3]], [Ig[:3, 3:], Ig[:3, :3]]]))
        rec("h_G rate", cen.h_G_dot, ours(pd.dhg.vector))
        rec("mass", com.mass, pd.mass[0])
        pin.computeAllTerms(pm, pd, qp, v)              # computeAllTerms: every term from one state
        pin.updateFramePlacements(pm, pd)
        allt = s.compute_all_terms(q, u, "local_world_aligned")
        M = np.triu(pd.M) + np.triu(pd.M, 1).T
        e = [rel_err(allt.M, T.T @ M @ T), rel_err(allt.nle, peer.rnea(q, u, np.zeros(s.nv))),
             rel_err(allt.com.position, pd.com[0]), rel_err(allt.com.velocity, pd.vcom[0]),
             rel_err(allt.J_com, pd.Jcom @ T), rel_err(allt.centroidal.A_G, ours(pd.Ag) @ T),
             rel_err(allt.centroidal.h_G, ours(pd.hg.vector))]
        for name, fid in frames.items():
            e.append(rel_err(allt.J[s.frames.index(name)],
                             ours(pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED) @ T)))
        worst["compute_all_terms"] = max(worst.get("compute_all_terms", 0.0), *e)
    return worst


def rel_err(a, b) -> float:
    b = np.asarray(b)
    return float(np.max(np.abs(np.asarray(a) - b)) / max(1.0, float(np.max(np.abs(b)))))
