"""``wavegit sync``'s reconciling of the tracker with what waves left behind: the rules and the one tracker
commit (:mod:`.reconcile`), merges of every kind (:mod:`.merged`), deleting settled waves' branches
(:mod:`.branches`). Git does all of it; GitHub is only asked about pull requests when configured."""
