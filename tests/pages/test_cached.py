"""``ui.cached.compute`` takes the analysis function itself (a reader can follow the call)
and keys the cache on the name it has in ``evalcore.analysis``; anything else is refused."""

from __future__ import annotations

import pytest

from ui import common
from ui.cached import compute


def test_a_function_outside_analysis_is_refused():
    with pytest.raises(TypeError, match="evalcore.analysis"):
        compute(len)
    with pytest.raises(TypeError):
        compute("leaderboard")            # the old call by name string


def test_the_face_reexports_each_part():
    from ui import cached, format, store_access, tables, url_widgets
    assert common.compute is cached.compute
    assert common.md_escape is format.md_escape
    assert common.get_store is store_access.get_store
    assert common.show_table is tables.show_table
    assert common.url_choice is url_widgets.url_choice
