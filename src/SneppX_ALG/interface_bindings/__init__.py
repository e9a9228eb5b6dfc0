"""Module paths the migration guide uses: ``SneppX_ALG.interface_bindings.generation`` and ``.dataloader``."""
