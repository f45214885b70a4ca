"""Clinical calibration (SPEC 4, 9): Cox's logistic recalibration, the ICI family, the classical tests
(Spiegelhalter, Hosmer-Lemeshow), their accumulators and the classical-tests family of ``tcal --test``."""
