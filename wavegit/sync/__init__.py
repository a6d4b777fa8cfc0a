"""``wavegit sync``: the tracker reconciled with what waves left behind, in one commit (:mod:`.reconcile`,
which states the rules), item by item (:mod:`.rules`), from the wave and base branches as fetched
(:mod:`.refs`) and merges of every kind (:mod:`.merged`); then settled waves' branches deleted
(:mod:`.branches`) and finished waves' leftovers removed (:mod:`.prune`). Git does all of it; pull requests
are asked about only through the interface :class:`.rules.PullRequests`, which the GitHub side implements."""
