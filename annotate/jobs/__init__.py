"""Long jobs (imports, recounts, exports, model checks) as rows with status and progress: their reads, their one
serializer and the job API."""
