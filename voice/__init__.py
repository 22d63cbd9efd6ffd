"""orderup's voice pipeline, one subpackage per stage in the order data flows:
audio → hearing → recognition → table, with the command line on top."""
