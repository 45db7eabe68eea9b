"""Runtime layer: compiled systems, simulation, results and their outputs."""
from .beams import BeamResult, BeamSystem
from .result import Result, atomic_write, load_result
from .system import System, build

__all__ = ["BeamResult", "BeamSystem", "Result", "System", "atomic_write", "build", "load_result"]
