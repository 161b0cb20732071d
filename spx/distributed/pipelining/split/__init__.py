"""How ``pipeline()`` cuts one model into stages.

- ``marker``  the boundary: ``pipe_split()``, ``SplitPoint`` and the ``split_spec`` annotation;
- ``cut``     traces the model once and cuts its program at the markers into stage plans.
"""
