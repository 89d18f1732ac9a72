"""The installed transformers is one the suite was run with (pyproject pins the same range), and the
check names the version and the fix when it is not."""
import transformers

from forgetless.models.transformers_compat import TESTED_TRANSFORMERS, untested_transformers


def test_installed_transformers_is_a_tested_version():
    message = untested_transformers()
    assert message is None, message


def test_an_untested_version_is_named_with_the_range_to_install():
    assert untested_transformers("5.24.0") is None and untested_transformers("5.23.1") is None
    message = untested_transformers("5.25.0")
    assert message == ("transformers 5.25.0 is not a version forgetless is tested with (5.23, 5.24); "
                       "install one: pip install 'transformers>=5.23,<5.25'")
    assert "5.22.0" in untested_transformers("5.22.0")
