"""The GitHub side of wavegit: what it needs from GitHub (:mod:`.api`), PyGithub behind it (:mod:`.client`,
:mod:`.retry`), the tracker over GitHub's API (:mod:`.store`), the merge gate (:mod:`.gate`), a wave's pull
request and report comment (:mod:`.publish`) and the Action's last step (:mod:`.action`)."""
