"""The daemon's configuration: units ← locate ← the sections ← models ← loader (imports flow that way only).

The package re-exports the models and the loader's functions; `__all__` names them and, after them, the public
modules other stages import. `locate` and `alerting` are internal to the package (their names are re-exported).
"""

from .alerting import (
    AlertingConfig,
    DefaultAlertsConfig,
    HealthAlertsConfig,
    NewSignaturesAlertConfig,
    SpendAlertConfig,
)
from .api import ApiConfig
from .evaluators import AlertConfig, EvaluatorEntry, EvaluatorOverride, EvaluatorSet, Resolved, SloConfig
from .judges import JudgesConfig
from .loader import DEFAULT_SOURCE, load_config, load_located
from .locate import ConfigError, Loc, LocatedError, Locator, dotted, validation_problems
from .metrics import MetricsConfig, Window
from .models import LoggingConfig, MonitorConfig, ShutdownConfig
from .pipeline import AssemblyConfig, EvaluationConfig
from .pricing import ModelPriceConfig, PricingConfig
from .receivers import GrpcReceiverConfig, HttpReceiverConfig, ReceiversConfig
from .review import ReviewConfig
from .security import AuthConfig, TlsConfig
from .sessions import SessionsConfig
from .signatures import SignatureRuleConfig, SignaturesConfig
from .store import StoreConfig
from .units import parse_duration, parse_size
from .variants import ComparisonConfig, PairwiseConfig, VariantsConfig

__all__ = [
    "DEFAULT_SOURCE",
    "AlertConfig",
    "AlertingConfig",
    "ApiConfig",
    "AssemblyConfig",
    "AuthConfig",
    "ComparisonConfig",
    "ConfigError",
    "DefaultAlertsConfig",
    "EvaluationConfig",
    "EvaluatorEntry",
    "EvaluatorOverride",
    "EvaluatorSet",
    "GrpcReceiverConfig",
    "HealthAlertsConfig",
    "HttpReceiverConfig",
    "JudgesConfig",
    "Loc",
    "LocatedError",
    "Locator",
    "LoggingConfig",
    "MetricsConfig",
    "ModelPriceConfig",
    "MonitorConfig",
    "NewSignaturesAlertConfig",
    "PairwiseConfig",
    "PricingConfig",
    "ReceiversConfig",
    "Resolved",
    "ReviewConfig",
    "SessionsConfig",
    "ShutdownConfig",
    "SignatureRuleConfig",
    "SignaturesConfig",
    "SloConfig",
    "SpendAlertConfig",
    "StoreConfig",
    "TlsConfig",
    "VariantsConfig",
    "Window",
    "dotted",
    "load_config",
    "load_located",
    "parse_duration",
    "parse_size",
    "validation_problems",
]
# the public modules; the others are internal to the package
__all__ += [
    "address", "api", "drift", "evaluators", "explain", "export", "external", "intake", "judges", "loader",
    "metrics", "models", "pipeline", "receivers", "review", "security", "sessions", "signatures", "sources", "store",
    "units", "variants",
]  # fmt: skip
