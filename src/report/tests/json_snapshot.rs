//! The JSON export of a comparison, whole.

use super::*;

#[test]
fn json_of_a_comparison_of_two_configurations() {
    let out = rendered(&Json, &[short_run()]);
    serde_json::from_str::<serde_json::Value>(&out).expect("the output is JSON");
    expect![[r#"
{
  "comparisons": [
    {
      "columns": [
        {
          "cpus": "0",
          "name": "up"
        },
        {
          "cpus": "0-1",
          "name": "noht"
        }
      ],
      "geomeans": [],
      "rows": [
        {
          "benchmark": "lat.syscall",
          "better": "lower",
          "cells": [
            {
              "cv": 0.007262402052227961,
              "median": 0.21,
              "n": 3,
              "p99": 0.21195999999999998,
              "status": "ok"
            },
            {
              "cv": 0.0055248618784530445,
              "median": 0.181,
              "n": 3,
              "p99": 0.18198,
              "status": "ok"
            }
          ],
          "changes": [
            {
              "answer": "unknown",
              "change_pct": 16.022099447513803,
              "ci_high": null,
              "ci_low": null,
              "p_mann_whitney": 0.08085559837341072,
              "p_welch": 0.000035096706832549174,
              "significant": false,
              "speedup": 1.160220994475138,
              "withheld": "few-samples"
            }
          ],
          "family": "lat",
          "params": {},
          "unit": "us"
        },
        {
          "benchmark": "lat.ctx",
          "better": "lower",
          "cells": [
            {
              "cv": 0.013333333333333345,
              "median": 1.5,
              "n": 3,
              "p99": 1.5196,
              "status": "ok"
            },
            {
              "below_resolution": 0.31,
              "cv": 3.0096000245368666,
              "median": 0.15,
              "n": 3,
              "p99": 0.30679999999999996,
              "status": "ok"
            }
          ],
          "changes": [
            null
          ],
          "family": "lat",
          "params": {
            "procs": "2",
            "size": "16"
          },
          "unit": "us"
        },
        {
          "benchmark": "lat.proc.exec",
          "better": "lower",
          "cells": [
            {
              "cv": 0.0028427657666185795,
              "median": 410.5,
              "n": 3,
              "p99": 411.97,
              "status": "ok"
            },
            {
              "cv": null,
              "median": null,
              "n": 0,
              "reason": "child failed (wait status 0x100): the program could not be run",
              "status": "failed"
            }
          ],
          "changes": [
            null
          ],
          "family": "lat",
          "params": {},
          "unit": "us"
        }
      ],
      "tail": false
    }
  ],
  "notes": [
    "answers: 0 different (*), 0 same, 1 unknown"
  ],
  "results": [
    {
      "benchmark": "lat.syscall",
      "better": "lower",
      "config": "up",
      "cpus": "0",
      "cv": 0.007262402052227961,
      "extras": {},
      "family": "lat",
      "max": 0.212,
      "mean": 0.21033333333333334,
      "mean_kind": "arithmetic",
      "median": 0.21,
      "min": 0.209,
      "n": 3,
      "notes": [],
      "p5": 0.20909999999999998,
      "p95": 0.2118,
      "p99": 0.21195999999999998,
      "params": {},
      "samples": [
        0.21,
        0.212,
        0.209
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.001527525231651948,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.ctx",
      "better": "lower",
      "config": "up",
      "cpus": "0",
      "cv": 0.013333333333333345,
      "extras": {},
      "family": "lat",
      "max": 1.52,
      "mean": 1.5,
      "mean_kind": "arithmetic",
      "median": 1.5,
      "min": 1.48,
      "n": 3,
      "notes": [],
      "p5": 1.482,
      "p95": 1.518,
      "p99": 1.5196,
      "params": {
        "procs": "2",
        "size": "16"
      },
      "samples": [
        1.52,
        1.5,
        1.48
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.020000000000000018,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.proc.exec",
      "better": "lower",
      "config": "up",
      "cpus": "0",
      "cv": 0.0028427657666185795,
      "extras": {},
      "family": "lat",
      "max": 412.0,
      "mean": 410.73333333333335,
      "mean_kind": "arithmetic",
      "median": 410.5,
      "min": 409.7,
      "n": 3,
      "notes": [],
      "p5": 409.78,
      "p95": 411.85,
      "p99": 411.97,
      "params": {},
      "samples": [
        410.5,
        412.0,
        409.7
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 1.167618659209138,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.syscall",
      "better": "lower",
      "config": "noht",
      "cpus": "0-1",
      "cv": 0.0055248618784530445,
      "extras": {},
      "family": "lat",
      "max": 0.182,
      "mean": 0.18099999999999997,
      "mean_kind": "arithmetic",
      "median": 0.181,
      "min": 0.18,
      "n": 3,
      "notes": [],
      "p5": 0.18009999999999998,
      "p95": 0.1819,
      "p99": 0.18198,
      "params": {},
      "samples": [
        0.18,
        0.182,
        0.181
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.0010000000000000009,
      "unit": "us",
      "warnings": []
    },
    {
      "below_resolution": 0.31,
      "benchmark": "lat.ctx",
      "better": "lower",
      "config": "noht",
      "cpus": "0-1",
      "cv": 3.0096000245368666,
      "extras": {},
      "family": "lat",
      "max": 0.31,
      "mean": 0.08666666666666667,
      "mean_kind": "arithmetic",
      "median": 0.15,
      "min": -0.2,
      "n": 3,
      "notes": [],
      "p5": -0.165,
      "p95": 0.294,
      "p99": 0.30679999999999996,
      "params": {
        "procs": "2",
        "size": "16"
      },
      "samples": [
        -0.2,
        0.31,
        0.15
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.26083200212652846,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.proc.exec",
      "better": "lower",
      "config": "noht",
      "cpus": "0-1",
      "extras": {},
      "family": "lat",
      "notes": [],
      "params": {},
      "reason": "child failed (wait status 0x100): the program could not be run",
      "samples": [],
      "samples_meta": [],
      "simulated": false,
      "status": "failed",
      "unit": "us",
      "warnings": []
    }
  ],
  "run": {
    "command": "kdelta run lat.syscall lat.ctx lat.proc.exec -c up,noht",
    "configs": [
      {
        "cpus": "0",
        "env": [],
        "name": "up",
        "policy": null
      },
      {
        "cpus": "0-1",
        "env": [],
        "name": "noht",
        "policy": null
      }
    ],
    "environment": {},
    "finished": "2024-05-01T10:04:31Z",
    "host": {},
    "id": 12,
    "kdelta_version": "0.1.0",
    "label": "baseline",
    "started": "2024-05-01T10:00:00Z",
    "status": "complete"
  },
  "runs": [
    {
      "configs": [
        {
          "cpus": "0",
          "env": [],
          "name": "up",
          "policy": null
        },
        {
          "cpus": "0-1",
          "env": [],
          "name": "noht",
          "policy": null
        }
      ],
      "id": 12,
      "label": "baseline",
      "started": "2024-05-01T10:00:00Z",
      "status": "complete"
    }
  ],
  "summaries": [],
  "warnings": [],
  "why": []
}
"#]]
    .assert_eq(&out);
}
