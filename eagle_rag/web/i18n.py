"""Interface strings in English and Chinese, chosen from a cookie or ``Accept-Language``."""

from __future__ import annotations

from collections.abc import Mapping

LANGUAGES = ("en", "zh")
COOKIE = "eagle_lang"

EN: Mapping[str, str] = {
    "app": "Eagle-RAG",
    "nav_kbs": "Knowledge bases",
    "nav_ask": "Ask",
    "nav_api": "API (OpenAPI)",
    "switch": "中文",
    "kbs_title": "Knowledge bases",
    "kb_name": "Name",
    "engine": "Engine",
    "documents": "Documents",
    "chunks": "Chunks",
    "text_chunks": "Text chunks",
    "chunk_split": "{text} text, {visual} figures, tables or page tiles",
    "status": "Status",
    "description": "Description",
    "actions": "Actions",
    "create_kb": "Create knowledge base",
    "create": "Create",
    "delete": "Delete",
    "rebuild": "Rebuild",
    "confirm_delete": "Delete knowledge base {name} and every document in it?",
    "confirm_rebuild": "Run every document of {name} through the pipeline again?",
    "rebuild_started": "Rebuilding {count} documents",
    "no_kbs": "No knowledge bases yet. Create one below.",
    "previous": "Previous",
    "next": "Next",
    "page_of": "Page {page} of {pages}",
    "required": "required",
    "upload_title": "Add documents",
    "drop_here": "Drop files here, or choose them",
    "choose_files": "Choose files",
    "urls": "URLs (one per line)",
    "add_urls": "Add URLs",
    "uploads": "Uploads",
    "retry": "Retry",
    "stream_lost": (
        "Lost contact with the server. The file was received and may still be processing."
    ),
    "file": "File",
    "phase": "Phase",
    "progress": "Progress",
    "no_documents": "No documents yet.",
    "document": "Document",
    "structure": "Structure",
    "original": "Original file",
    "pages": "Pages",
    "pages_shown": "Showing the first {shown} of {pages} pages.",
    "level": "Level",
    "path": "Path",
    "ask_title": "Ask",
    "ask_kbs": "Knowledge bases to search",
    "question": "Question",
    "ask": "Ask",
    "new_chat": "New conversation",
    "sessions": "Conversations",
    "no_sessions": "No conversations yet.",
    "steps": "Steps",
    "sources": "Sources",
    "score": "Score",
    "page": "Page",
    "preview": "Page preview",
    "close": "Close",
    "no_boxes": "This source has no stored boxes; the whole page is shown.",
    "no_pages": "This source has no page image (not a paged document).",
    "api_key": "API key",
    "api_key_needed": "This server needs an API key. It is kept in this browser tab only.",
    "use_key": "Use key",
    "key_missing": "An API key is needed to show this.",
    "key_refused": "The API key was refused. Check it and enter it again.",
    "forget_key": "Forget key",
    "error": "Error",
    "loading": "Loading…",
    "completed": "completed",
    "failed": "failed",
    "queued": "queued",
    "processing": "processing",
    "unchanged": "already in the knowledge base",
    "pick_kb": "Choose at least one knowledge base.",
    "back": "Back",
    "view": "View",
    "images": "Images",
    "answer": "Answer",
    "you": "You",
    "created": "created",
    "deleted": "deleted",
    "pending": "pending",
    "confirm_delete_doc": "Delete document {name} with its chunks and files?",
    "confirm_delete_session": "Delete conversation “{name}”?",
    "source": "Source",
    "not_found": "Not found",
    "kb_not_found": "Knowledge base “{name}” was not found. It may have been deleted.",
    "document_not_found": "Document “{name}” was not found. It may have been deleted.",
    "kb_name_needed": "A knowledge base needs a name.",
    "kb_name_rule": (
        "Use lowercase letters, digits, - and _, starting with a letter or digit, "
        "at most 64 characters."
    ),
    "boxes_one": "{count} box",
    "boxes_many": "{count} boxes",
}

ZH: Mapping[str, str] = {
    "app": "Eagle-RAG",
    "nav_kbs": "知识库",
    "nav_ask": "问答",
    "nav_api": "API（OpenAPI）",
    "switch": "English",
    "kbs_title": "知识库",
    "kb_name": "名称",
    "engine": "引擎",
    "documents": "文档",
    "chunks": "分块",
    "text_chunks": "文本分块",
    "chunk_split": "{text} 个文本块，{visual} 个图、表或页面图块",
    "status": "状态",
    "description": "描述",
    "actions": "操作",
    "create_kb": "新建知识库",
    "create": "创建",
    "delete": "删除",
    "rebuild": "重建",
    "confirm_delete": "删除知识库 {name} 及其中全部文档？",
    "confirm_rebuild": "让 {name} 的全部文档重新走一遍处理流程？",
    "rebuild_started": "正在重建 {count} 个文档",
    "no_kbs": "还没有知识库，请在下方新建。",
    "previous": "上一页",
    "next": "下一页",
    "page_of": "第 {page} / {pages} 页",
    "required": "必填",
    "upload_title": "添加文档",
    "drop_here": "把文件拖到这里，或选择文件",
    "choose_files": "选择文件",
    "urls": "网址（每行一个）",
    "add_urls": "添加网址",
    "uploads": "上传",
    "retry": "重试",
    "stream_lost": "与服务器失去联系。文件已收到，可能仍在处理中。",
    "file": "文件",
    "phase": "阶段",
    "progress": "进度",
    "no_documents": "还没有文档。",
    "document": "文档",
    "structure": "结构",
    "original": "原始文件",
    "pages": "页数",
    "pages_shown": "显示前 {shown} 页，共 {pages} 页。",
    "level": "层级",
    "path": "路径",
    "ask_title": "问答",
    "ask_kbs": "检索的知识库",
    "question": "问题",
    "ask": "提问",
    "new_chat": "新对话",
    "sessions": "对话",
    "no_sessions": "还没有对话。",
    "steps": "步骤",
    "sources": "来源",
    "score": "得分",
    "page": "页",
    "preview": "页面预览",
    "close": "关闭",
    "no_boxes": "该来源没有保存的框，显示整页。",
    "no_pages": "该来源没有页面图像（不是分页文档）。",
    "api_key": "API 密钥",
    "api_key_needed": "此服务需要 API 密钥，仅保存在当前浏览器标签页中。",
    "use_key": "使用密钥",
    "key_missing": "需要 API 密钥才能显示此内容。",
    "key_refused": "API 密钥被拒绝。请检查后重新输入。",
    "forget_key": "清除密钥",
    "error": "错误",
    "loading": "加载中…",
    "completed": "已完成",
    "failed": "失败",
    "queued": "排队中",
    "processing": "处理中",
    "unchanged": "知识库中已有",
    "pick_kb": "请至少选择一个知识库。",
    "back": "返回",
    "view": "查看",
    "images": "图片",
    "answer": "回答",
    "you": "你",
    "created": "已创建",
    "deleted": "已删除",
    "pending": "等待中",
    "confirm_delete_doc": "删除文档 {name} 及其分块和文件？",
    "confirm_delete_session": "删除对话“{name}”？",
    "source": "来源",
    "not_found": "未找到",
    "kb_not_found": "未找到知识库“{name}”，它可能已被删除。",
    "document_not_found": "未找到文档“{name}”，它可能已被删除。",
    "kb_name_needed": "知识库需要一个名称。",
    "kb_name_rule": "只能使用小写字母、数字、- 和 _，以字母或数字开头，最多 64 个字符。",
    "boxes_one": "{count} 个框",
    "boxes_many": "{count} 个框",
    # The server's messages are English: a failure is named in Chinese by its code first, and
    # the server's own words follow (they name the file, the field or the limit).
    "err_unauthorized": "需要有效的 API 密钥",
    "err_forbidden": "无权执行此操作",
    "err_namespace_forbidden": "无权访问此命名空间",
    "err_rate_limited": "请求过于频繁，请稍后再试",
    "err_not_found": "未找到",
    "err_conflict": "与已有内容冲突",
    "err_invalid_input": "输入无效",
    "err_invalid_request": "请求无效",
    "err_payload_too_large": "文件或请求过大",
    "err_unsupported_media_type": "不支持此文件类型",
    "err_backend_unavailable": "后端服务暂不可用",
    "err_model_provider_error": "模型服务出错",
    "err_upstream_error": "上游服务出错",
    "err_vector_store_error": "向量库出错",
    "err_hook_invocation_error": "插件出错",
    "err_component_error": "组件出错",
    "err_internal_error": "服务器内部错误",
    "err_method_not_allowed": "不支持此请求方法",
}

CATALOGS: Mapping[str, Mapping[str, str]] = {"en": EN, "zh": ZH}


def pick_language(cookie: str | None, accept_language: str | None) -> str:
    """The cookie's choice when valid, else the best ``Accept-Language`` match, else English."""
    if cookie in LANGUAGES:
        return cookie
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and quality > 0:
            ranked.append((-quality, position, primary))
    return min(ranked)[2] if ranked else "en"


def label(item_label: Mapping[str, str], language: str, fallback: str) -> str:
    """An engine schema's i18n label (``en_US`` / ``zh_Hans`` keys) in the chosen language."""
    keys = ("zh_Hans", "zh_CN", "zh") if language == "zh" else ("en_US", "en")
    for key in (*keys, "en_US"):
        if item_label.get(key):
            return item_label[key]
    return fallback
