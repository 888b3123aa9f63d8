"""What the run engine's results add to the exports registry: each batch's latest InterFeedback-Bench run
(Tables 1/2) and latest FIRE fixed- and free-dialogue runs (Tables 2-5)."""

from __future__ import annotations

from annotate.models import BenchRun
from evaluation.bench.tables import bench_paper_table, latest_run
from evaluation.exports import registry as exports
from evaluation.fire.runs import fire_run_tables

exports.register_export("bench", exports.TABLE_FORMATS,
                        lambda batch, fmt, filters: bench_paper_table(latest_run(batch)))
for _name, _protocol in (("fire-fixed", BenchRun.Protocol.FIRE_FIXED), ("fire-free", BenchRun.Protocol.FIRE_FREE)):
    exports.register_export(_name, exports.TABLE_FORMATS,
                            lambda batch, fmt, filters, protocol=_protocol: fire_run_tables(latest_run(batch, protocol)))
