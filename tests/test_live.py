"""spx._live: the per-thread registries spx.compile checks after a trace."""

import copy
import threading

import spx
from spx._live import Registry
from spx.nn.module import live_modules
from spx.optim.optimizer import live_optimizers


class _Thing:
    pass


def test_a_thread_sees_only_the_objects_it_registered():
    things = Registry()
    mine = _Thing()
    things.add(mine)
    seen: list[list] = []

    def other() -> None:
        theirs = _Thing()
        things.add(theirs)
        seen.append(things.mine())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert things.mine() == [mine]
    assert len(seen[0]) == 1 and seen[0][0] is not mine


def test_objects_are_dropped_when_they_die():
    things = Registry()
    obj = _Thing()
    things.add(obj)
    del obj
    assert things.mine() == []


def test_modules_and_optimizers_register_however_they_are_made():
    model = spx.nn.Linear(2, 2)
    clone = copy.deepcopy(model)  # made through __new__, without Module.__init__
    opt = spx.optim.SGD(model.parameters(), lr=0.1)
    assert any(m is clone for m in live_modules())
    assert any(m is model for m in live_modules())
    assert any(o is opt for o in live_optimizers())
