//! Model providers, registered by the prefix of a model's name: `openai:NAME`,
//! `anthropic:NAME` and `scripted:FILE` are the standard ones, and a program that
//! embeds toolgate registers its own beside them ([`Providers::with`]). The runtime
//! asks the providers it was given and names none of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::{
    AnthropicModel, FallbackModel, Model, ModelError, ModelSpec, OpenAiConfig, OpenAiModel,
    ScriptedModel,
};

/// Makes the models of one prefix.
pub trait ModelProvider: Send + Sync {
    /// The model `spec` names; `model` is its name after `PREFIX:` (never empty).
    /// `config` holds the process's defaults (API keys and base URLs from the
    /// environment, retries, timeouts).
    fn make(
        &self,
        model: &str,
        spec: &ModelSpec,
        config: &OpenAiConfig,
    ) -> Result<Arc<dyn Model>, ModelError>;
}

impl<F> ModelProvider for F
where
    F: Fn(&str, &ModelSpec, &OpenAiConfig) -> Result<Arc<dyn Model>, ModelError> + Send + Sync,
{
    fn make(
        &self,
        model: &str,
        spec: &ModelSpec,
        config: &OpenAiConfig,
    ) -> Result<Arc<dyn Model>, ModelError> {
        self(model, spec, config)
    }
}

/// The providers a process makes its models with, by prefix. Cheap to clone.
#[derive(Clone, Default)]
pub struct Providers {
    by_prefix: BTreeMap<String, Arc<dyn ModelProvider>>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.by_prefix.keys()).finish()
    }
}

impl Providers {
    /// `openai:NAME` (any OpenAI-compatible server), `anthropic:NAME` and
    /// `scripted:FILE` (canned replies, for demos and tests).
    pub fn standard() -> Self {
        Self::default()
            .with(
                "openai",
                |model: &str, spec: &ModelSpec, config: &OpenAiConfig| {
                    let made = OpenAiModel::new(model, config.clone(), spec.settings.clone())?;
                    Ok(Arc::new(made) as Arc<dyn Model>)
                },
            )
            .with(
                "anthropic",
                |model: &str, spec: &ModelSpec, config: &OpenAiConfig| {
                    let made = AnthropicModel::new(model, config.clone(), spec.settings.clone())?;
                    Ok(Arc::new(made) as Arc<dyn Model>)
                },
            )
            .with("scripted", |file: &str, _: &ModelSpec, _: &OpenAiConfig| {
                let made = ScriptedModel::load(std::path::Path::new(file))?;
                Ok(Arc::new(made) as Arc<dyn Model>)
            })
    }

    /// These providers, with `provider` making the models named `prefix:NAME` (in place
    /// of any provider that had the prefix).
    pub fn with(mut self, prefix: &str, provider: impl ModelProvider + 'static) -> Self {
        self.by_prefix
            .insert(prefix.to_string(), Arc::new(provider));
        self
    }

    /// The registered prefixes, in order.
    pub fn prefixes(&self) -> impl Iterator<Item = &str> {
        self.by_prefix.keys().map(String::as_str)
    }

    /// Checks that `name` is `PREFIX:NAME` for a registered prefix.
    pub fn check(&self, name: &str) -> Result<(), ModelError> {
        self.provider(name).map(|_| ())
    }

    fn provider<'a>(&self, name: &'a str) -> Result<(&dyn ModelProvider, &'a str), ModelError> {
        let found = name
            .split_once(':')
            .filter(|(_, model)| !model.trim().is_empty())
            .and_then(|(prefix, model)| Some((self.by_prefix.get(prefix)?, model)));
        match found {
            Some((provider, model)) => Ok((provider.as_ref(), model)),
            None => Err(ModelError::Config(format!(
                "'{name}' is not a model; use {}",
                self.forms()
            ))),
        }
    }

    /// `openai:NAME, anthropic:NAME or scripted:FILE` for the standard providers.
    fn forms(&self) -> String {
        let forms: Vec<String> = self
            .prefixes()
            .map(|p| match p {
                "scripted" => "scripted:FILE".to_string(),
                p => format!("{p}:NAME"),
            })
            .collect();
        match forms.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "a registered provider (none is)".to_string(),
        }
    }

    /// Makes the model `spec` names, with its settings.
    pub fn make(
        &self,
        spec: &ModelSpec,
        config: &OpenAiConfig,
    ) -> Result<Arc<dyn Model>, ModelError> {
        let (provider, model) = self.provider(&spec.name)?;
        provider.make(model, spec, config)
    }

    /// `primary`, then each of `fallback` in order when it keeps failing (`primary` as
    /// it is when there is no fallback).
    pub fn with_fallbacks(
        &self,
        primary: Arc<dyn Model>,
        fallback: &[ModelSpec],
        config: &OpenAiConfig,
    ) -> Result<Arc<dyn Model>, ModelError> {
        if fallback.is_empty() {
            return Ok(primary);
        }
        let mut models = vec![primary];
        for spec in fallback {
            models.push(self.make(spec, config)?);
        }
        Ok(Arc::new(FallbackModel::new(models)?))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_name_without_a_registered_prefix_says_which_there_are() {
        let standard = Providers::standard();
        let e = standard.check("gpt-4o").unwrap_err().to_string();
        assert_eq!(
            e,
            "'gpt-4o' is not a model; use anthropic:NAME, openai:NAME or scripted:FILE"
        );
        assert!(standard.check("openai: ").is_err());
        assert!(standard.check("openai:gpt-4o").is_ok());
        assert!(standard.check("mine:m").is_err());
    }

    #[test]
    fn a_program_registers_a_provider_of_its_own() {
        let echo =
            |model: &str, _: &ModelSpec, _: &OpenAiConfig| -> Result<Arc<dyn Model>, ModelError> {
                Err(ModelError::Config(format!("made {model}")))
            };
        let providers = Providers::standard().with("mine", echo);
        let spec = ModelSpec {
            name: "mine:small".into(),
            settings: Default::default(),
        };
        let made = providers.make(&spec, &OpenAiConfig::default());
        assert_eq!(made.err().unwrap().to_string(), "made small");
        assert!(providers.prefixes().any(|p| p == "mine"));
    }
}
