"""The hardware model: GPU specs, occupancy, waves, grids, bank conflicts, roofline."""
from .banks import conflict_degree, tile_column_read
from .occupancy import Grid, Occupancy, Waves, grid, occupancy, waves
from .roofline import Roofline, compiled_occupancy, roofline
from .specs import GPUS, GPUSpec, current, get

__all__ = ["GPUS", "GPUSpec", "get", "current", "occupancy", "Occupancy", "waves", "Waves",
           "grid", "Grid", "conflict_degree", "tile_column_read", "roofline", "Roofline",
           "compiled_occupancy"]
