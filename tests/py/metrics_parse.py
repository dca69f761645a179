"""Reads metrics expositions with the Prometheus project's own Python parsers and
prints them as JSON: for each file named on the command line, its families (name,
type) and samples (name, labels, value). The first argument names the format:
`classic` (the Prometheus text format, prometheus_client.parser) or `openmetrics`
(prometheus_client.openmetrics.parser). tests/metrics.rs compares scrapes taken
before and after a run with it."""

import json
import sys

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families as classic_families


def read(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    families = []
    parser = classic_families if FORMAT == "classic" else openmetrics_families
    for family in parser(text):
        families.append(
            {
                "name": family.name,
                "type": family.type,
                "samples": [
                    {"name": s.name, "labels": s.labels, "value": s.value}
                    for s in family.samples
                ],
            }
        )
    return families


FORMAT = sys.argv[1]
json.dump({path: read(path) for path in sys.argv[2:]}, sys.stdout)
