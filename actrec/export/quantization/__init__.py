"""A quantised export (`actrec export --quantize`), besides its format's own conversion.

    quantized_export.py  the steps an export takes: options checked, the request calibrated,
                         the accuracy gate measured and written into actrec.json
    calibration.py       the clips it is calibrated on (int8) and gated by, from prepared data
    accuracy_gate.py     the float and the quantised model's top-1 on the same held-out clips
    onnx_int8.py         an ONNX model quantised to int8 by ONNX Runtime (QDQ)
    streaming_step.py    the online TSM's step calibrated on real recurrent states
    tflite_int8_states.py  an int8 TFLite step's states fed back as int8 where their scale
                         holds (QUANTIZE / DEQUANTIZE removed from the flatbuffer)

Import names from these modules; this package re-exports nothing.
"""
