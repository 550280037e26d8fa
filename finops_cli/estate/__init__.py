"""The estate: fleet and workloads loaded from YAML into typed models (:mod:`.load`), checked (:mod:`.checks`) and
priced once per command (:mod:`.priced`) before any math runs."""
