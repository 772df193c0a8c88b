"""Prompt constants. ``{placeholders}`` are filled with ``str.format``."""

#: Every yes/no routing decision is asked in this shape, at temperature 0: the question,
#: the instruction to answer with one word, then the user's prompt.
CLASSIFY = "{question} Answer with 'yes' or 'no'.\n\nPrompt: {prompt}"

IS_CALCULATION = "Is the following prompt a math equation with numbers and operators?"

IS_ABOUT_IMAGE = (
    "Is the following prompt asking about an image, picture, photo, diagram or screenshot?"
)

#: Used only when the deterministic extractor finds no expression in a calculator prompt.
EXTRACT_EXPRESSION = (
    "Rewrite the following request as a single arithmetic expression using only numbers, "
    "+ - * / ^ and parentheses. Reply with the expression only.\n\nRequest: {prompt}"
)

#: The relevance grader, answered as JSON {"score": "yes" | "no"}. Deliberately lenient:
#: it only has to filter out retrievals that are plainly unrelated.
GRADE_DOCUMENT = (
    "You are a grader assessing relevance of a retrieved document to a user question.\n"
    "Here is the retrieved document:\n\n{document}\n\n"
    "Here is the user question: {question}\n"
    "If the document contains keywords related to the user question, grade it as relevant.\n"
    "It does not need to be a stringent test. The goal is to filter out erroneous retrievals.\n"
    "Give a binary score 'yes' or 'no' score to indicate whether the document is relevant "
    "to the question.\n"
    "Provide the binary score as a JSON with a single key 'score' and no preamble or "
    "explanation."
)

GRADE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["score"],
}

#: System prompt of the answer step: the notes are the only allowed source.
GENERATE_SYSTEM = (
    "You are an assistant for question-answering tasks over the user's own notes. "
    "Use only the following pieces of retrieved context to answer the question. "
    "If the context does not contain the answer, say that you cannot find the answer in "
    "the notes; do not make one up. Keep the answer concise.\n\n"
    "Context:\n{context}"
)

#: How one chunk is shown to the generator; the header lets it refer to the note.
CONTEXT_CHUNK = "[{number}] {source} — {heading}\n{content}"

#: Rewrites a follow-up into a question that can be searched on its own.
CONDENSE_QUESTION = (
    "Given the conversation below and a follow-up question, rewrite the follow-up as a "
    "standalone question that can be understood without the conversation. Reply with the "
    "question only.\n\nConversation:\n{history}\n\nFollow-up question: {question}"
)

IMAGE_SYSTEM = (
    "You answer questions about the attached image(s). Describe only what you can see; "
    "if the image does not show the answer, say so."
)
