"""A sweep task that first asks the scheduler how many of the sweep's tasks it holds (tests/runtime/test_sweep.py).

Module-level, so that Dask pickles it by reference and the in-process workers append to this module's SEEN."""
SEEN = []


def counted_chunk(*args):
    from distributed import get_client
    SEEN.append(get_client().run_on_scheduler(
        lambda dask_scheduler: sum(str(k).startswith("counted_chunk") for k in dask_scheduler.tasks)))
    return counted_chunk.__wrapped__(*args)     # the real run_chunk (set by the test)
