from typing import Any

from dify_plugin import ToolProvider
from dify_plugin.errors.tool import ToolProviderCredentialValidationError


class Provider(ToolProvider):
    def _validate_credentials(self, credentials: dict[str, Any]) -> None:
        # Make a cheap call to the service here and raise when it refuses the key.
        if "api_key" in credentials and not credentials["api_key"]:
            raise ToolProviderCredentialValidationError("api_key is empty")
