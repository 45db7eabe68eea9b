"""Rotation helpers of the model layer (placements in model files)."""
from __future__ import annotations

import math

import numpy as np


def rot_axis_angle(axis, angle) -> np.ndarray:
    """The rotation matrix of an axis and an angle [rad] (Rodrigues' formula)."""
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def rot_rpy(rpy) -> np.ndarray:
    """Fixed-axis roll-pitch-yaw (URDF convention): R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    return rot_axis_angle([0, 0, 1], y) @ rot_axis_angle([0, 1, 0], p) @ rot_axis_angle([1, 0, 0], r)


def quat_to_rot(qwxyz) -> np.ndarray:
    """The rotation matrix of a quaternion (w, x, y, z), normalised first."""
    w, x, y, z = np.asarray(qwxyz, float) / np.linalg.norm(qwxyz)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def rot_to_quat(R) -> np.ndarray:
    """Rotation matrix -> unit quaternion (w, x, y, z), w >= 0 (Shepperd's method)."""
    R = np.asarray(R, float)
    tr = np.trace(R)
    if tr > 0:
        s = 2 * math.sqrt(tr + 1)
        q = [s / 4, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2 * math.sqrt(1 + R[0, 0] - R[1, 1] - R[2, 2])
        q = [(R[2, 1] - R[1, 2]) / s, s / 4, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif R[1, 1] > R[2, 2]:
        s = 2 * math.sqrt(1 + R[1, 1] - R[0, 0] - R[2, 2])
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, s / 4, (R[1, 2] + R[2, 1]) / s]
    else:
        s = 2 * math.sqrt(1 + R[2, 2] - R[0, 0] - R[1, 1])
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, s / 4]
    q = np.array(q)
    return q if q[0] >= 0 else -q


def frame_to_axis(axis) -> np.ndarray:
    """A rotation K whose z column is the unit ``axis`` (x, y completed right-handed)."""
    z = np.asarray(axis, float)
    z = z / np.linalg.norm(z)
    helper = np.array([1.0, 0, 0]) if abs(z[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])
