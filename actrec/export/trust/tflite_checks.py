"""What a TFLite file handed to `actrec predict` may hold, read as data before it is loaded
(actrec.export.trust.savedmodel_ops does this for SavedModels, actrec.export.trust.onnx_checks for
ONNX files).

- model.tflite: only LiteRT's builtin operators. A custom operator runs code the file does
  not contain, and a Flex operator (custom code "Flex...") runs any TensorFlow op, file
  writes included; actrec's exports hold neither (tests/export/test_untrusted_models.py).

A file that cannot be parsed is refused by name as damaged.
"""

from __future__ import annotations

from pathlib import Path

from actrec.errors import UntrustedModelError
from actrec.export.trust.savedmodel_ops import TRUST_FLAG

TFLITE_IDENTIFIER = b"TFL3"


def _damaged(path: Path, what: str) -> UntrustedModelError:
    return UntrustedModelError(
        f"{path} is not a readable {what} (damaged or cut short); export the model again"
    )


def tflite_custom_ops(path: Path) -> list[str]:
    """The custom operators' codes of a .tflite file ([] for builtin operators only);
    UntrustedModelError when it is not a TFLite file."""
    from tensorflow.lite.python import schema_py_generated as schema

    content = path.read_bytes()
    if len(content) < 8 or content[4:8] != TFLITE_IDENTIFIER:
        raise _damaged(path, "TFLite model")
    try:
        model = schema.Model.GetRootAs(content, 0)
        custom = []
        for index in range(model.OperatorCodesLength()):
            code = model.OperatorCodes(index)
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            if builtin == schema.BuiltinOperator.CUSTOM:
                custom.append((code.CustomCode() or b"?").decode("utf-8", "replace"))
        # Every operator of every subgraph must name one of those codes.
        for graph_index in range(model.SubgraphsLength()):
            graph = model.Subgraphs(graph_index)
            for operator_index in range(graph.OperatorsLength()):
                if graph.Operators(operator_index).OpcodeIndex() >= model.OperatorCodesLength():
                    raise _damaged(path, "TFLite model")
    except (IndexError, ValueError, TypeError, UnicodeDecodeError, OverflowError):
        raise _damaged(path, "TFLite model") from None
    except Exception as error:  # flatbuffers raises struct.error and its own types
        if isinstance(error, UntrustedModelError):
            raise
        raise _damaged(path, "TFLite model") from None
    return sorted(set(custom))


def check_tflite_file(path: Path) -> None:
    """UntrustedModelError for a damaged file or one with custom or Flex operators."""
    if not path.is_file():
        raise UntrustedModelError(f"{path} does not exist; export the model again")
    custom = tflite_custom_ops(path)
    if custom:
        flex = [code for code in custom if code.startswith("Flex")]
        kind = "TensorFlow (Flex) operators" if flex else "custom operators"
        raise UntrustedModelError(
            f"{path} holds {kind} {', '.join(custom)}, which an actrec export never does: "
            "they run code that is not in the file and may act on your files. It was not "
            f"loaded; if you trust its author, pass {TRUST_FLAG}"
        )
