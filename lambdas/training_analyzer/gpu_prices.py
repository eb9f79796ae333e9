"""On-demand price of one GPU-hour, by GPU model: the instance's us-east-1 on-demand price
divided by its GPUs, as this project recorded them (2026-11; check the EC2 pricing page, which
could not be re-read when this was written). Override with the gpu_hour_price_usd setting."""

from typing import Final

PRICES_AS_OF: Final = "us-east-1 on-demand, as recorded 2026-11"

#: GPU model -> (instance the price comes from, USD per GPU-hour)
GPU_HOUR_USD: Final[dict[str, tuple[str, float]]] = {
    "B200": ("p6-b200.48xlarge", 14.24),
    "H200": ("p5en.48xlarge", 7.91),
    "H100": ("p5.48xlarge", 6.88),
    "A100": ("p4d.24xlarge", 2.75),
    "L40S": ("g6e.xlarge", 1.86),
    "A10G": ("g5.xlarge", 1.01),
    "L4": ("g6.xlarge", 0.80),
    "V100": ("p3.2xlarge", 3.06),
    "T4": ("g4dn.xlarge", 0.53),
}
DEFAULT_GPU: Final = "H100"


def gpu_hour_price(gpu_model: str | None) -> float:
    """The price for a GPU name such as "NVIDIA H100 80GB HBM3"; H100's when unknown."""
    name = (gpu_model or "").upper()
    for model, (_, price) in GPU_HOUR_USD.items():
        if model in name:
            return price
    return GPU_HOUR_USD[DEFAULT_GPU][1]
