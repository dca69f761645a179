//! The program's own pieces: a tool source bringing two tools written in Rust
//! (`lookup_price`, AUTO; `place_order`, CONFIRM) and a model provider, `shop:rules`,
//! whose model asks for both tools, then answers from their results.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value, json};
use toolgate_model::{
    Model, ModelError, ModelProvider, ModelReply, ModelRequest, ModelSpec, OpenAiConfig, ReplySink,
};
use toolgate_parse::NativeCalls;
use toolgate_protocol::Usage;
use toolgate_tool::{
    LoadedTool, Origin, Permission, Schema, Tool, ToolContext, ToolError, ToolOutput, ToolSource,
    ToolSpec,
};

/// The shop: its price list is fixed, its orders are counted.
#[derive(Clone, Default)]
pub struct Shop {
    orders: Arc<AtomicUsize>,
}

impl Shop {
    /// The source that brings the shop's tools into a library.
    pub fn source(&self) -> ShopSource {
        ShopSource { shop: self.clone() }
    }

    /// How many orders were placed.
    pub fn orders(&self) -> usize {
        self.orders.load(Ordering::SeqCst)
    }
}

/// A [`ToolSource`] with no files: its tools are fixed, like the built-ins.
pub struct ShopSource {
    shop: Shop,
}

impl ToolSource for ShopSource {
    fn name(&self) -> &'static str {
        "shop"
    }

    fn fixed(&self) -> Vec<LoadedTool> {
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(ShopTool::new(lookup_spec(), self.shop.clone())),
            Arc::new(ShopTool::new(order_spec(), self.shop.clone())),
        ];
        tools
            .into_iter()
            .filter_map(|tool| {
                let spec = tool.spec().clone();
                let schema = Schema::compile(&spec.parameters).ok()?;
                Some(LoadedTool::new(
                    spec,
                    schema,
                    None,
                    Origin::PROGRAM,
                    Some(tool),
                ))
            })
            .collect()
    }
}

fn lookup_spec() -> ToolSpec {
    let item =
        json!({"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]});
    ToolSpec {
        read_only: true,
        ..ToolSpec::new(
            "lookup_price",
            "The price of one item, in euros.",
            Permission::Auto,
            item,
        )
    }
}

fn order_spec() -> ToolSpec {
    let order = json!({
        "type": "object",
        "properties": {"item": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1}},
        "required": ["item", "quantity"]
    });
    let about = "Places an order: it costs money, so a person approves it.";
    ToolSpec::new("place_order", about, Permission::Confirm, order)
}

/// One of the shop's tools.
struct ShopTool {
    spec: ToolSpec,
    shop: Shop,
}

impl ShopTool {
    fn new(spec: ToolSpec, shop: Shop) -> Self {
        ShopTool { spec, shop }
    }
}

#[async_trait::async_trait]
impl Tool for ShopTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        let item = args.get("item").and_then(Value::as_str).unwrap_or_default();
        match self.spec.name.as_str() {
            "lookup_price" => Ok(ToolOutput::json(json!({"item": item, "price": 3.5}))),
            _ => {
                let quantity = args.get("quantity").and_then(Value::as_u64).unwrap_or(1);
                let number = self.shop.orders.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(ToolOutput::text(format!(
                    "order {number}: {quantity} x {item}"
                )))
            }
        }
    }
}

/// Makes `shop:rules` models.
pub struct RulesProvider;

impl ModelProvider for RulesProvider {
    fn make(
        &self,
        _model: &str,
        _spec: &ModelSpec,
        _config: &OpenAiConfig,
    ) -> Result<Arc<dyn Model>, ModelError> {
        Ok(Arc::new(RulesModel))
    }
}

/// First asks for the price and the order, then answers from the price it got back.
struct RulesModel;

#[async_trait::async_trait]
impl Model for RulesModel {
    fn name(&self) -> &str {
        "shop:rules"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let asked = request.messages.iter().any(|m| !m.tool_calls.is_empty());
        let mut native = NativeCalls::default();
        let content = if asked {
            let price = request
                .messages
                .iter()
                .find_map(|m| {
                    m.content
                        .contains("\"price\"")
                        .then(|| price_in(&m.content))
                })
                .flatten()
                .unwrap_or(0.0);
            format!(
                "Ordered 2 tea at {price:.2} each: {:.2} in all.",
                price * 2.0
            )
        } else {
            let lookup = json!({"item": "tea"}).to_string();
            let order = json!({"item": "tea", "quantity": 2}).to_string();
            native.delta(
                0,
                Some("call_price"),
                Some("lookup_price"),
                Some(&lookup),
                0,
            );
            native.delta(1, Some("call_order"), Some("place_order"), Some(&order), 0);
            "Looking it up and ordering.".to_string()
        };
        sink.text(&content);
        Ok(ModelReply {
            content,
            native,
            usage: Usage {
                model_calls: 1,
                ..Usage::default()
            },
            reasoning: Vec::new(),
            truncated: false,
        })
    }
}

/// The `price` of a JSON result.
fn price_in(text: &str) -> Option<f64> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("price")?
        .as_f64()
}
