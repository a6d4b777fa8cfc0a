"""``wavegit demo``: the walkthrough (:mod:`.walkthrough`), its example project and backlog (:mod:`.project`)
and the built-in worker it runs (``python -m wavegit.demo.worker``, :mod:`.worker`)."""
