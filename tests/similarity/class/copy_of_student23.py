import math

import torch
import torch.nn.functional as F
from torch import nn



def attention_scores(Q,K):
    kt = K.mT
    # my result
    return Q@kt



def scale_scores(scores,d_k):
    debug = False
    # my result
    return scores * d_k ** -0.5



def causal_mask(T_q,T_k=None,*,device=None):
    if T_k is None:
        T_k = T_q
    i = torch.arange(T_q,device=device).unsqueeze(1)
    j = torch.arange(T_k,device=device).unsqueeze(0)
    # my result
    return (j - i) <= 0



def padding_mask(valid_lens,T_k):
    lens = valid_lens[:,None] if valid_lens.dim() == 1 else valid_lens
    # my result
    return torch.arange(T_k,device=lens.device) < lens.unsqueeze(-1)



def masked_softmax(scores,mask=None):
    if mask is not None:
        scores = scores + (1.0 - mask.to(scores.dtype)) * -10000.0
    # my result
    return torch.softmax(scores,dim=-1)



def attention_output(weights,V):
    return torch.matmul(weights,V)



def scaled_dot_product_attention(Q,K,V,mask=None,is_causal=False):
    d = Q.size(-1)
    if is_causal:
        c = causal_mask(Q.size(-2),K.size(-2),device=Q.device)
        mask = c if mask is None else torch.logical_and(mask,c)
    w = masked_softmax(scale_scores(attention_scores(Q,K),d),mask)
    return attention_output(w,V),w



class MultiHeadAttention(nn.Module):
    def __init__(self,d_model,num_heads,bias=True):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.w_q,self.w_k,self.w_v,self.w_o = (nn.Linear(d_model,d_model,bias=bias) for _ in range(4))

    def forward(self,query,key,value,mask=None,is_causal=False):
        def heads(x):
            b,t,_ = x.shape
            return x.view(b,t,self.num_heads,self.d_head).transpose(1,2)

        q,k,v = heads(self.w_q(query)),heads(self.w_k(key)),heads(self.w_v(value))
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        ctx,attn = scaled_dot_product_attention(q,k,v,mask,is_causal)
        b,_,t,_ = ctx.shape
        ctx = ctx.transpose(1,2).reshape(b,t,self.d_model)
        return self.w_o(ctx),attn



def dot_product_variance(d_k,num_samples=10000,generator=None):
    q = torch.randn(num_samples,d_k,generator=generator)
    k = torch.randn(num_samples,d_k,generator=generator)
    # my result
    return (q * k).sum(dim=-1).var().item()
