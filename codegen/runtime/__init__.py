"""Runtime layer: compiled systems (one class per kind of model: families/), simulation, results and their outputs."""
from .integrate import SimulationDiverged
from .result import BeamResult, Result, atomic_write, load_result
from .system import System, build
from .families import BeamSystem, GrcrSystem, LoopSystem, TreeSystem

__all__ = ["BeamResult", "BeamSystem", "GrcrSystem", "LoopSystem", "Result", "SimulationDiverged", "System",
           "TreeSystem", "atomic_write", "build", "load_result"]
