#!/usr/bin/env bash
# The exporter against a real GPU node, in about 90 seconds: what NVML gives on this GPU, a
# recorded NVML trace (exporter.fake_nvml's format) and the exporter's own EMF output over four
# phases: idle, memory held but no work, a bf16 matrix-product load, idle again.
# Needs: python3 with nvidia-ml-py and torch (for the load). Writes into $OUT (default ./gpu-check).
set -u
OUT=${OUT:-gpu-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,power.limit,enforced.power.limit,memory.total,ecc.mode.current,clocks.max.sm --format=csv >"$OUT/nvidia-smi.csv" 2>&1
python3 - >"$OUT/versions.txt" 2>&1 <<'PY'
import sys, importlib.metadata as m
print(sys.version)
for name in ("nvidia-ml-py", "torch"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        print(name, "missing")
PY
SECONDS_TOTAL=${SECONDS_TOTAL:-70}
python3 -m exporter.record_trace --seconds "$SECONDS_TOTAL" --interval 1 >"$OUT/trace.jsonl" 2>"$OUT/record.log" &
timeout -s INT $((SECONDS_TOTAL + 2)) python3 -m agent --cluster-name gpu-check --node-name "$(hostname)" \
  --interval 5 --sink stdout --proc-root /proc >"$OUT/exporter.jsonl" 2>"$OUT/exporter.log" &
sleep 10
# 10-30 s: a process holds 20 GiB and does nothing; 30-50 s: bf16 matrix products; then idle.
python3 - >"$OUT/load.log" 2>&1 <<'PY'
import time, torch
held = torch.empty(20 * 2**30, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("holding", held.numel() >> 30, "GiB on", torch.cuda.get_device_name(), flush=True)
time.sleep(20)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
start, products = time.monotonic(), 0
while time.monotonic() - start < 20:
    for _ in range(50):
        a @ b
    torch.cuda.synchronize()
    products += 50
seconds = time.monotonic() - start
print(f"{products} products in {seconds:.1f} s: {products * 2 * 8192**3 / seconds / 1e12:.0f} TFLOP/s")
PY
wait
echo "exporter exit: see exporter.log"; tail -5 "$OUT/exporter.log"; tail -2 "$OUT/record.log"; cat "$OUT/load.log"
python3 -m pytest -q -p no:cacheprovider tests/unit/exporter/test_fake_nvml.py >"$OUT/fake_vs_pynvml.txt" 2>&1
tail -3 "$OUT/fake_vs_pynvml.txt"
