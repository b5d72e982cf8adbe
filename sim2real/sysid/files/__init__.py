"""What a fit writes and reads back: fit.json's typed document and its one reader (``fit_file``), the fitted
params YAML written with it (``writeback``; per object: ``fitted_objects``), and the samples directory of
``sim2real sample`` (``sample_files``). The modules are imported where used: nothing is loaded with the
package."""
