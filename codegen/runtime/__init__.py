"""Runtime layer: compiled systems, simulation, results and their outputs."""
from .integrate import SimulationDiverged
from .result import BeamResult, Result, atomic_write, load_result
from .system import BeamSystem, System, build

__all__ = ["BeamResult", "BeamSystem", "Result", "SimulationDiverged", "System", "atomic_write", "build",
           "load_result"]
