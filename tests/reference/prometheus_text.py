#!/usr/bin/env python3
"""Parses a Prometheus text exposition (the file given) with Prometheus's own Python client
(Debian's python3-prometheus-client), an independent reader of what `orion serve` exposes at
/metrics, and prints its samples as JSON: [{"name", "labels", "value", "type"}...]. A text
the parser refuses exits non-zero with its error."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

text = open(sys.argv[1], encoding="utf-8").read()
samples = []
for family in text_string_to_metric_families(text):
    for s in family.samples:
        samples.append({"name": s.name, "labels": s.labels, "value": s.value, "type": family.type})
print(json.dumps(samples))
