"""The documentation's generated tables, rendered by :mod:`benchmarks.docs_tables`.

* :mod:`~benchmarks.tables.store`: stored benchmark outputs and their provenance;
* :mod:`~benchmarks.tables.format`: numbers, units and Markdown tables;
* :mod:`~benchmarks.tables.code`: tables from the code (parameter registry, benchmark inventory);
* :mod:`~benchmarks.tables.speed`, :mod:`~benchmarks.tables.fits`, :mod:`~benchmarks.tables.runs`: benchmark figures.

Not benchmarks themselves: ``make bench`` runs the modules directly under ``benchmarks/`` only.
"""
