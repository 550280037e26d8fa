"""The economic core: pure functions over the estate models. No I/O, no terminal, no CLI imports."""
