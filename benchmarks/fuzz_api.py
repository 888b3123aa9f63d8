"""The API fuzz run of the suite (tests/fuzz), longer: schemathesis over every operation of /api/schema/ as four
personas (anonymous, annotator, researcher, admin), with valid and invalid input.

Usage:
  DATABASE_URL=postgres://... REDIS_URL=redis://127.0.0.1:6379/N .venv/bin/python benchmarks/fuzz_api.py
  ... --examples 50     cases per operation, persona and kind of input (the suite sends 4)
  ... --seed 7          other cases than the last run (default: a random seed, printed)

It runs the fuzz tests through pytest (a scratch test database, the same data as the suite) and prints, per
persona: requests sent, the statuses answered, server errors and schema violations (undocumented status or
content type, a body the schema does not describe). Both must be 0; each failing case is printed as a curl line
(the Authorization header is filtered: use the persona's token from the test database to replay it). The exit
status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1, 2**31)
    os.environ["FUZZ_EXAMPLES"], os.environ["FUZZ_SEED"] = str(args.examples), str(seed)
    os.chdir(ROOT)

    import pytest

    started = time.perf_counter()
    pytest.main(["-q", "-p", "no:cacheprovider", "--show-capture=no", "--no-header", "-o", "timeout=0",
                 "tests/fuzz/test_api_fuzz.py"])
    elapsed = time.perf_counter() - started

    from tests.fuzz.harness import TALLIES

    print(f"\nAPI fuzz: {args.examples} cases per operation, persona and kind of input; seed {seed}; {elapsed:.0f} s")
    print(f"{'persona':<12}{'requests':>10}{'server errors':>15}{'schema violations':>19}  statuses")
    failed = False
    for persona, tally in TALLIES.items():
        statuses = " ".join(f"{code}:{n}" for code, n in sorted(tally.statuses.items()))
        print(f"{persona:<12}{tally.requests:>10}{tally.server_errors:>15}{tally.schema_violations:>19}  {statuses}")
        failed = failed or bool(tally.failures)
    for persona, tally in TALLIES.items():
        if tally.reproductions:
            print(f"\n{persona}: {dict(tally.failures)}")
            print("\n".join(tally.reproductions))
    return 1 if failed or len(TALLIES) < 4 else 0


if __name__ == "__main__":
    sys.exit(main())
