"""Model layer: rigid-body trees and flexible beams; schema, loading, validation; the model library."""
from .beams import Beam, BeamJoint, BeamLayout, BeamLoad, BeamModel, beam_model_from_dict
from .core import (FORCE_FUNCTIONS, GROUND, Body, Joint, JointForce, JointSpringDamper, Model, ModelError, Placement,
                   PointSpringDamper, TimeFunction, default_q, validate)
from .joint_types import JOINT_TYPES, QUATERNION_JOINTS, SCALAR_JOINTS, JointType
from .loader import dumps_json, load_model, model_from_dict
from .rotations import frame_to_axis, quat_to_rot, rot_axis_angle, rot_rpy, rot_to_quat

__all__ = ["Beam", "BeamJoint", "BeamLayout", "BeamLoad", "BeamModel", "Body", "FORCE_FUNCTIONS", "GROUND",
           "JOINT_TYPES", "Joint", "JointForce", "JointType", "JointSpringDamper", "Model", "ModelError", "Placement",
           "PointSpringDamper", "QUATERNION_JOINTS", "SCALAR_JOINTS", "TimeFunction", "beam_model_from_dict",
           "default_q", "dumps_json", "frame_to_axis", "load_model", "model_from_dict", "quat_to_rot",
           "rot_axis_angle", "rot_rpy", "rot_to_quat", "validate"]
