import logging
logging.disable(logging.ERROR)
from benchmarks import page_faults as p, webhook_faults as w
runs = w.main()
for r in runs:
    print(w.line(r))
print(f"pages lost {sum(r.lost for r in runs)}, claims left held {sum(r.claims_held for r in runs)}")
print(p.otlp_line([p.otlp_fault(f) for f in p.OTLP_FAULTS]))
print(p.hang_line(p.webhook_hang()))
print(p.forgery_line(p.forgery()))
print(p.late_line(p.late_answer()))
