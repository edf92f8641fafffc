//! Parsing HTML with its depth bounded as the parser builds the tree. The HTML parser's tree
//! building costs time in proportion to the depth of its open elements for every tag (scope
//! checks walk them), so a page nested 200,000 deep would take minutes. A scan of the tags before
//! parsing can only guess that depth (end tags of nothing, formatting elements rebuilt, foreign
//! content, comments and raw text all change it); so instead the tree being built is measured:
//! every element the parser inserts has its depth counted (its ancestors, up to one past the
//! limit), and the input is fed in small pieces, stopping at the first piece whose tree went
//! over the limit. Open elements are the current node's ancestors, or, foster-parented beside a
//! table, within a small constant factor of them, so the parser never works past a bounded depth,
//! and the cost is linear in the input.

use std::borrow::Cow;
use std::cell::{Cell, Ref, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use ego_tree::NodeId;
use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};

/// Bytes of input fed to the parser at a time: how far it may go past the limit before it stops.
const PIECE: usize = 8 * 1024;

/// scraper's tree sink, with the depth of every element inserted measured.
struct DepthSink {
    inner: HtmlTreeSink,
    limit: usize,
    /// The deepest depth over the limit seen, if any.
    over: Rc<Cell<Option<usize>>>,
    /// Each measured node's depth and the epoch it was measured in: an insertion costs one look
    /// at its parent's.
    depths: RefCell<HashMap<NodeId, (usize, u64)>>,
    /// Moves a whole subtree (the parser's reparenting) and so makes every depth measured before
    /// it suspect: those of the moved nodes' descendants are measured again when next needed.
    epoch: Cell<u64>,
}

impl DepthSink {
    /// `node`'s depth: its ancestors, the document included, counted up to the nearest one
    /// measured in this epoch (at most one past the limit), then remembered.
    fn depth(&self, node: NodeId) -> usize {
        let html = self.inner.0.borrow();
        let epoch = self.epoch.get();
        let mut depths = self.depths.borrow_mut();
        let mut chain = Vec::new();
        let mut base = 0;
        let mut at = html.tree.get(node);
        while let Some(n) = at {
            if let Some(&(d, e)) = depths.get(&n.id()) {
                if e == epoch {
                    base = d;
                    break;
                }
            }
            chain.push(n.id());
            if base + chain.len() > self.limit {
                break;
            }
            at = n.parent();
        }
        let depth = base + chain.len();
        for (i, id) in chain.into_iter().enumerate() {
            depths.insert(id, (depth - i, epoch));
        }
        depth
    }

    /// Notes `node`'s depth, and whether it went over the limit.
    fn measure(&self, node: NodeId) {
        if self.over.get().is_some() {
            return;
        }
        let depth = self.depth(node);
        if depth > self.limit {
            self.over.set(Some(depth));
        }
    }
}

impl TreeSink for DepthSink {
    type Output = Html;
    type Handle = NodeId;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Html {
        self.inner.finish()
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg);
    }

    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        let node = match &child {
            NodeOrText::AppendNode(id) => Some(*id),
            NodeOrText::AppendText(_) => None,
        };
        self.inner.append(parent, child);
        if let Some(node) = node {
            self.measure(node);
        }
    }

    fn append_based_on_parent_node(&self, element: &NodeId, prev_element: &NodeId, child: NodeOrText<NodeId>) {
        let has_parent = self
            .inner
            .0
            .borrow()
            .tree
            .get(*element)
            .is_some_and(|n| n.parent().is_some());
        if has_parent {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, name: StrTendril, public_id: StrTendril, system_id: StrTendril) {
        self.inner.append_doctype_to_document(name, public_id, system_id);
    }

    fn mark_script_already_started(&self, node: &NodeId) {
        self.inner.mark_script_already_started(node);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        let node = match &new_node {
            NodeOrText::AppendNode(id) => Some(*id),
            NodeOrText::AppendText(_) => None,
        };
        self.inner.append_before_sibling(sibling, new_node);
        if let Some(node) = node {
            self.measure(node);
        }
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target);
        self.epoch.set(self.epoch.get() + 1);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent);
        self.epoch.set(self.epoch.get() + 1);
        let first = self
            .inner
            .0
            .borrow()
            .tree
            .get(*new_parent)
            .and_then(|n| n.first_child())
            .map(|c| c.id());
        if let Some(child) = first {
            self.measure(child);
        }
    }
}

/// Parses a document, or answers the depth its tree went over `limit` at (then the rest is never
/// parsed).
pub(super) fn parse_bounded(text: &str, limit: usize) -> Result<Html, usize> {
    let over = Rc::new(Cell::new(None));
    let sink = DepthSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        limit,
        over: over.clone(),
        depths: RefCell::new(HashMap::new()),
        epoch: Cell::new(0),
    };
    let mut parser = html5ever::driver::parse_document(sink, Default::default());
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PIECE);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, after) = rest.split_at(cut);
        parser.process(StrTendril::from_slice(piece));
        if let Some(depth) = over.get() {
            return Err(depth);
        }
        rest = after;
    }
    let html = parser.finish();
    match over.get() {
        Some(depth) => Err(depth),
        None => Ok(html),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deepest(html: &Html) -> usize {
        html.tree
            .root()
            .descendants()
            .map(|n| n.ancestors().count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn a_page_parses_whole_when_shallow() {
        let html = parse_bounded("<!doctype html><main><h1>T</h1><p>text</p></main>", 512).unwrap();
        assert!(deepest(&html) < 10);
    }

    #[test]
    fn the_tree_is_measured_not_the_tags() {
        // What tag counting missed (each nests in the parser, and so in the tree).
        let hostile = [
            "<div></x>",                        // an end tag of nothing open closes nothing
            "<span><div></span>",               // an ordinary end tag never closes past a div
            "<div><b></div>t",                  // formatting elements rebuilt at each text
            "<dd><li>",                         // list items that stop each other's closing
            "<div><noscript></div></noscript>", // raw text when scripting is on
            "<div><!</div>",                    // a bogus comment hides the end tag
            "<div><?</div>",
            "<div></1</div>",
        ];
        for unit in hostile {
            let page = unit.repeat(2_000);
            let depth = parse_bounded(&page, 512).expect_err(unit);
            assert!(depth > 512, "{unit}: {depth}");
        }
        // Foreign content: <style> is markup inside <svg>, and a `/` in a quoted attribute does
        // not close a tag.
        for page in [
            format!("<svg><style>{}", "<div>".repeat(2_000)),
            format!("<svg>{}", "<g a=\"/>\">".repeat(2_000)),
            format!("<svg>{}", "<g><![CDATA[</g>]]>".repeat(2_000)),
            format!("<!-->{}", "<div>".repeat(2_000)),
        ] {
            assert!(parse_bounded(&page, 512).is_err(), "{}", &page[..30]);
        }
        // Deep but within the limit parses; sloppy nesting that stays shallow too.
        assert!(parse_bounded(&"<div>".repeat(400), 512).is_ok());
        assert!(parse_bounded(&"<div><span><b>text</div>".repeat(5_000), 512).is_ok());
        // A bold run left open across paragraphs is reopened at each one and nests in a browser
        // too: its real depth, not a guess, decides.
        let leaky = "<p><b>bold</p>plain ".repeat(1_000);
        let real = deepest(&parse_bounded(&leaky, usize::MAX).unwrap());
        assert!(real > 1_000, "{real}");
        assert_eq!(parse_bounded(&leaky, 512).unwrap_err(), 513);
    }

    #[test]
    fn hostile_pages_stop_within_a_piece_of_the_limit() {
        // 200,000 repeats each: the parse stops once the tree is too deep, so the work is bounded
        // by the limit and one piece of input, not by the page (they took minutes before).
        for unit in ["<div></x>", "<span><div></span>", "<div><b></div>t"] {
            let page = unit.repeat(200_000);
            assert!(parse_bounded(&page, 512).is_err(), "{unit}");
        }
    }
}
