"""A processor-sharing model of the streaming ingest's threads on a few cores: how long the
stream would take if the only limits were each stage's CPU per block and the waits between the
threads (no GIL, no scheduler). Used to ask whether the order of the stages holds the ingest back.

The waits modelled are those of ``formats/logs/log4j.parse`` (a block is taken out once the next
one is submitted: ``ahead`` blocks in flight) and of ``ingestion/sink.Sink.add`` (the matcher runs
one block behind the sink; one Parquet write in flight). Per-block CPU in milliseconds, as
``bench/ingest_timeline.py`` measures them (thread CPU over the 1 GB mix / 256 blocks of 4 MiB).

```sh
python bench/ingest_model.py
```
"""

from __future__ import annotations


def stream(read=2.6, sink=4.0, parse=10.2, match=6.3, write=10.7, blocks=256, cores=2, ahead=1, dt=0.05):
    """(seconds, mean cores busy) of the stream under the model."""

    def main_steps():
        for n in range(blocks + ahead):
            if n < blocks:
                yield ("work", read)
                yield ("parse", n)
            m = n - ahead  # the block taken out of the parse
            if 0 <= m < blocks:
                yield ("wait", ("parse", m))
                yield ("work", sink)
                yield ("match", m)
                if m >= 1:
                    yield ("wait", ("match", m - 1))
                    if m >= 2:
                        yield ("wait", ("write", m - 2))
                    yield ("write", m - 1)
        yield ("wait", ("match", blocks - 1))
        if blocks >= 2:
            yield ("wait", ("write", blocks - 2))
        yield ("write", blocks - 1)
        yield ("wait", ("write", blocks - 1))

    cost = {"parse": parse, "match": match, "write": write}
    queues: dict[str, list[int]] = {"parse": [], "match": [], "write": []}
    workers: dict[str, list | None] = {"parse 1": None, "parse 2": None, "match": None, "write": None}
    done: set[tuple[str, int]] = set()
    steps = main_steps()
    step = next(steps, None)
    main_left: float | None = None
    t = busy = 0.0
    while True:
        while step is not None and main_left is None:
            kind, arg = step
            if kind in queues:
                queues[kind].append(arg)
            elif kind == "wait":
                if arg not in done:
                    break
            else:
                main_left = arg
                break
            step = next(steps, None)
        for w in workers:
            stage = w.split()[0]
            if workers[w] is None and queues[stage]:
                workers[w] = [stage, queues[stage].pop(0), cost[stage]]
        running = [w for w, job in workers.items() if job is not None] + (["main"] if main_left is not None else [])
        if step is None and not running:
            return t / 1000, busy / t if t else 0.0
        share = min(1.0, cores / len(running)) if running else 0.0
        busy += min(cores, len(running)) * dt
        for w in running:
            if w == "main":
                assert main_left is not None
                main_left -= share * dt
                if main_left <= 0:
                    main_left = None
                    step = next(steps, None)
                continue
            job = workers[w]
            assert job is not None
            job[2] -= share * dt
            if job[2] <= 0:
                done.add((job[0], job[1]))
                workers[w] = None
        t += dt


if __name__ == "__main__":
    for label, kw in [
        ("as measured", {}),
        ("parse two blocks ahead", {"ahead": 2}),
        ("a third less write CPU", {"write": 7.0}),
        ("a quarter less parse CPU", {"parse": 7.7}),
        ("no reading on the main thread", {"read": 0.0}),
    ]:
        s, busy = stream(**kw)
        print(f"{label:32s} stream {s:.2f} s, cores busy {busy:.2f} of 2")
