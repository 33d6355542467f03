from __future__ import annotations

from eagle_rag import errors


def test_every_error_derives_from_eagle_error_and_has_a_unique_code() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert all(issubclass(cls, errors.EagleError) for cls in classes)
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes))


def test_errors_carry_their_fields_into_message_and_wire_shape() -> None:
    exc = errors.HookInvocationError("failed", plugin="biomed", hook="PARSE", document_id="d1")
    assert exc.plugin == "biomed" and exc.hook == "PARSE"
    assert str(exc) == "failed (document_id='d1', hook='PARSE', plugin='biomed')"
    assert exc.to_dict() == {
        "code": "hook_invocation_error",
        "message": "failed",
        "details": {"plugin": "biomed", "hook": "PARSE", "document_id": "d1"},
    }


def test_none_fields_are_dropped() -> None:
    assert errors.NotFoundError("gone", kb_name=None).to_dict() == {
        "code": "not_found",
        "message": "gone",
    }


def test_docstring_tree_names_every_error() -> None:
    doc = errors.__doc__ or ""
    for name, value in vars(errors).items():
        if isinstance(value, type) and issubclass(value, errors.EagleError):
            assert name in doc, f"{name} is missing from the error tree drawing"
